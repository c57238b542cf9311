// A device tensor with guard zones on both sides, in the arena shared with the launcher. The
// guards hold a known pattern; a kernel that writes past either end of its buffer changes them,
// and the judge notices.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "harness/arena.h"
#include "runtime/runtime.h"

namespace ak {

inline constexpr size_t kGuardBytes = 4096;  // a multiple of 256 keeps the data aligned
inline constexpr std::byte kGuardPattern{0xA5};
inline constexpr std::byte kPoisonPattern{0xFF};  // a NaN no arithmetic produces (all mantissa bits)

class GuardedTensor {
 public:
  GuardedTensor(Runtime& runtime, ArenaAllocator& arena, TensorSpec spec);

  const TensorSpec& spec() const { return spec_; }
  void* data() const;
  // Where the data starts in the shared arena.
  size_t arena_offset() const { return arena_offset_; }

  void poison();
  // Whether every byte still holds the poison pattern (nothing has written the tensor since poison()).
  bool still_poisoned() const;
  // "" when both guards are intact, else e.g. "wrote 12 bytes past the end of y".
  std::string check_guards() const;

 private:
  Runtime& runtime_;
  TensorSpec spec_;
  std::unique_ptr<Buffer> buffer_;
  size_t arena_offset_ = 0;
};

}  // namespace ak
