// A parallel loop for references and generators: splits [0, n) into contiguous chunks over the
// hardware threads. Small n runs inline.
#pragma once

#include <cstdint>
#include <functional>

namespace ak {

void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body,
                  int64_t min_chunk = 1);

}  // namespace ak
