#include "core/parallel.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace ak {

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body, int64_t min_chunk) {
  if (n <= 0) return;
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t workers = std::min<int64_t>(hw, std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk)));
  if (workers == 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  const int64_t chunk = (n + workers - 1) / workers;
  for (int64_t w = 0; w < workers; ++w) {
    const int64_t begin = w * chunk, end = std::min(n, begin + chunk);
    if (begin >= end) break;
    threads.emplace_back([&, w, begin, end] {
      try {
        body(begin, end);
      } catch (...) {
        errors[static_cast<size_t>(w)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ak
