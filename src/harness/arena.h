// The judge's allocator over the arena it shares with the launcher: every tensor a kernel is
// given lives there (and nothing else: the references, the timing's pool of inputs and the
// sampled positions stay in the judge's own memory, which the kernel's process cannot map).
#pragma once

#include <cstddef>
#include <map>
#include <memory>

#include "runtime/runtime.h"

namespace ak {

class ArenaAllocator {
 public:
  explicit ArenaAllocator(SharedArena& arena) : arena_(arena) { free_.emplace(0, arena.size()); }

  // First fit, 256-byte aligned. Throws Error(Internal) when the arena is too small (the judge
  // sized it from the experiment's plan, so this is the engine's error, not the kernel's).
  std::unique_ptr<Buffer> allocate(size_t bytes);
  // Where `address` (inside the arena) lies, in bytes from its start: what the launcher adds to
  // its own mapping's address.
  size_t offset_of(const void* address) const;
  SharedArena& arena() const { return arena_; }
  size_t free_bytes() const;

  static constexpr size_t kAlignment = 256;

 private:
  friend class ArenaBuffer;
  void release(size_t offset, size_t bytes) noexcept;

  SharedArena& arena_;
  std::map<size_t, size_t> free_;  // offset -> length, disjoint and merged
};

}  // namespace ak
