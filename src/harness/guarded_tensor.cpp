#include "harness/guarded_tensor.h"

#include <algorithm>

namespace ak {

GuardedTensor::GuardedTensor(Runtime& runtime, ArenaAllocator& arena, TensorSpec spec)
    : runtime_(runtime),
      spec_(std::move(spec)),
      buffer_(arena.allocate(spec_.bytes() + 2 * kGuardBytes)),
      arena_offset_(arena.offset_of(data())) {
  runtime_.fill(buffer_->data(), kGuardPattern, kGuardBytes);
  runtime_.fill(static_cast<std::byte*>(buffer_->data()) + kGuardBytes + spec_.bytes(), kGuardPattern,
                kGuardBytes);
}

void* GuardedTensor::data() const {
  return static_cast<std::byte*>(buffer_->data()) + kGuardBytes;
}

void GuardedTensor::poison() {
  runtime_.fill(data(), kPoisonPattern, spec_.bytes());
}

bool GuardedTensor::still_poisoned() const {
  return runtime_.first_byte_not(data(), kPoisonPattern, spec_.bytes()) < 0;
}

std::string GuardedTensor::check_guards() const {
  std::vector<std::byte> before(kGuardBytes), after(kGuardBytes);
  runtime_.download(before.data(), buffer_->data(), kGuardBytes);
  runtime_.download(after.data(), static_cast<std::byte*>(buffer_->data()) + kGuardBytes + spec_.bytes(),
                    kGuardBytes);
  auto bad = [](std::byte b) { return b != kGuardPattern; };
  if (auto it = std::find_if(after.begin(), after.end(), bad); it != after.end())
    return "wrote past the end of " + spec_.name + " (byte " + std::to_string(it - after.begin()) +
           " after it)";
  if (auto it = std::find_if(before.rbegin(), before.rend(), bad); it != before.rend())
    return "wrote before the start of " + spec_.name + " (byte " + std::to_string(it - before.rbegin() + 1) +
           " before it)";
  return "";
}

}  // namespace ak
