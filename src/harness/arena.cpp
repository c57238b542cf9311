#include "harness/arena.h"

#include "core/error.h"

namespace ak {

class ArenaBuffer final : public Buffer {
 public:
  ArenaBuffer(ArenaAllocator& owner, size_t offset, size_t bytes, size_t reserved)
      : owner_(owner), offset_(offset), bytes_(bytes), reserved_(reserved) {}
  ~ArenaBuffer() override { owner_.release(offset_, reserved_); }
  void* data() const override { return owner_.arena().data() + offset_; }
  size_t size() const override { return bytes_; }

 private:
  ArenaAllocator& owner_;
  size_t offset_, bytes_, reserved_;
};

std::unique_ptr<Buffer> ArenaAllocator::allocate(size_t bytes) {
  const size_t reserved = std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const auto [offset, length] = *it;
    if (length < reserved) continue;
    free_.erase(it);
    if (length > reserved) free_.emplace(offset + reserved, length - reserved);
    return std::make_unique<ArenaBuffer>(*this, offset, bytes, reserved);
  }
  throw Error(ErrorKind::Internal, "the shared arena (" + std::to_string(arena_.size()) + " bytes, " +
                                       std::to_string(free_bytes()) + " free) has no room for " +
                                       std::to_string(bytes) + " bytes");
}

size_t ArenaAllocator::offset_of(const void* address) const {
  const auto* p = static_cast<const std::byte*>(address);
  if (p < arena_.data() || p >= arena_.data() + arena_.size())
    throw Error(ErrorKind::Internal, "offset_of: an address outside the shared arena");
  return static_cast<size_t>(p - arena_.data());
}

size_t ArenaAllocator::free_bytes() const {
  size_t total = 0;
  for (const auto& [offset, length] : free_) total += length;
  return total;
}

void ArenaAllocator::release(size_t offset, size_t bytes) noexcept {
  auto [it, inserted] = free_.emplace(offset, bytes);
  if (!inserted) return;  // cannot happen: blocks are disjoint
  if (auto next = std::next(it); next != free_.end() && offset + bytes == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

}  // namespace ak
