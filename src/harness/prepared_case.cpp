#include "harness/prepared_case.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace ak {
namespace {

using Key = std::tuple<std::string, std::string, int, std::string, uint64_t>;

std::vector<int64_t> sample_rows(const Signature& sig, std::mt19937_64& rng) {
  const auto& out = sig.outputs.front();
  const int64_t n_rows = out.numel() / out.row_length();
  std::set<int64_t> rows;
  std::uniform_int_distribution<int64_t> pick(0, n_rows - 1);
  rows.insert(0);
  rows.insert(n_rows - 1);  // the edges are where tiles go wrong
  while (static_cast<int64_t>(rows.size()) < std::min<int64_t>(n_rows, kSampledRows)) rows.insert(pick(rng));
  return {rows.begin(), rows.end()};
}

// Appends the compared elements of one output's float64 reference, as float, and their rms.
void keep_compared(PreparedCase& prepared, const Values& out) {
  const int64_t row_len = out.spec.row_length();
  const std::vector<int64_t>& rows = prepared.rows;
  const int64_t compared = rows.empty() ? out.spec.numel() : static_cast<int64_t>(rows.size()) * row_len;
  add_compared(prepared, compared, [&](int64_t k) {
    const int64_t i = rows.empty() ? k : rows[static_cast<size_t>(k / row_len)] * row_len + k % row_len;
    return out.data[static_cast<size_t>(i)];
  });
}

std::shared_ptr<const PreparedCase> build(const Op& op, const CaseSpec& set) {
  const Problem& problem = set.problem;
  auto prepared = std::make_shared<PreparedCase>();
  prepared->signature = op.signature(problem, set.dtype);
  const Signature& sig = prepared->signature;

  std::vector<Values> inputs;
  for (const auto& spec : sig.inputs)
    inputs.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()))});
  std::mt19937_64 rng(set.seed);
  op.generate(problem, set.input_case, rng, inputs);
  // The reference sees exactly what the kernel reads: the values after rounding to the dtype.
  for (auto& input : inputs) {
    const std::vector<std::byte> encoded = encode(input.spec, input.data);
    prepared->input_bytes.emplace_back(encoded.begin(), encoded.end());
    input.data = decode(input.spec, encoded);
  }

  if (op.row_sampling() && op.flops(problem) > kFullReferenceFlops) prepared->rows = sample_rows(sig, rng);
  std::vector<Values> reference;
  for (const auto& spec : sig.outputs)
    reference.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()), 0.0)});
  op.reference(problem, inputs, reference, prepared->rows);
  for (const Values& out : reference) keep_compared(*prepared, out);
  return prepared;
}

Key key_of(const Op& op, const CaseSpec& set) {
  return {std::string(op.name()), set.problem.to_string(), static_cast<int>(set.dtype), set.input_case,
          set.seed};
}

// Kept: the sets of the plans keep_prepared_cases named, the most recently named first to stay
// (a suite loop returns to each kernel after the others' turns: redrawing its references then
// cost seconds an experiment). Recent: anything else drawn, bounded so that large cases of
// earlier problems do not pile up.
struct Cache {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const PreparedCase>> kept, recent;
  std::map<Key, uint64_t> last_named;  // of each kept set: when keep_prepared_cases last named it
  uint64_t clock = 0;
};

// What kept sets may hold: a quarter of the machine's memory.
size_t kept_bytes_bound() {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 4;
}

// Drops the kept sets of other plans, least recently named first, until those left and `incoming`
// more bytes fit the bound; without `evict`, only says whether they fit as they are. The caller
// holds the mutex.
bool make_room(Cache& c, const std::map<Key, CaseSpec>& wanted, size_t incoming, bool evict) {
  size_t total = incoming;
  std::vector<std::pair<uint64_t, Key>> others;
  for (const auto& [key, prepared] : c.kept) {
    total += prepared->input_size() + prepared->reference_size();
    if (!wanted.contains(key)) others.emplace_back(c.last_named[key], key);
  }
  if (!evict) return total <= kept_bytes_bound();
  std::sort(others.begin(), others.end());
  for (const auto& [named, key] : others) {
    if (total <= kept_bytes_bound()) break;
    total -= c.kept.at(key)->input_size() + c.kept.at(key)->reference_size();
    c.kept.erase(key);
    c.last_named.erase(key);
  }
  return true;
}

Cache& cache() {
  static Cache instance;
  return instance;
}

// Entered around everything drawing does with a lock or a new thread, paused by a fork
// (DrawingPause): a child forked while a background thread drew then finds no lock of the cache
// held. The child itself never enters it (it reads the cache through prepare_case only), since
// a thread may be holding the gate's own mutex at the fork. A pause waits for those inside and holds new ones
// off (a shared_mutex, which prefers readers, could keep it waiting while the drawing threads take turns).
class DrawingGate {
 public:
  void enter() {
    std::unique_lock lock(mutex_);
    open_.wait(lock, [&] { return !paused_; });
    ++inside_;
  }
  void leave() {
    std::lock_guard lock(mutex_);
    --inside_;
    open_.notify_all();
  }
  void pause() {
    std::unique_lock lock(mutex_);
    open_.wait(lock, [&] { return !paused_; });
    paused_ = true;
    open_.wait(lock, [&] { return inside_ == 0; });
  }
  void resume() {
    std::lock_guard lock(mutex_);
    paused_ = false;
    open_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable open_;
  int inside_ = 0;
  bool paused_ = false;
};

DrawingGate& drawing_gate() {
  static DrawingGate gate;
  return gate;
}

struct Drawing {
  Drawing() { drawing_gate().enter(); }
  ~Drawing() { drawing_gate().leave(); }
  Drawing(const Drawing&) = delete;
  Drawing& operator=(const Drawing&) = delete;
};

// Draws sets[i] for every i on `threads` threads pulling indices in turn; the largest sets go
// first (the caller sorts) so that no thread is left with a big one at the end.
void draw_in_parallel(const Op& op, const std::vector<CaseSpec>& sets, const std::vector<Key>& keys) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < sets.size();) {
      const Drawing drawing;
      std::shared_ptr<const PreparedCase> prepared;
      try {
        prepared = build(op, sets[i]);
      } catch (const std::exception&) {
        continue;  // the experiment draws it itself and reports the error where it happens
      }
      std::lock_guard lock(cache().mutex);
      cache().kept.emplace(keys[i], std::move(prepared));
    }
  };
  const size_t n_threads = std::min<size_t>(sets.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::jthread> threads;
  for (size_t t = 1; t < n_threads; ++t) {
    const Drawing drawing;
    threads.emplace_back(work);
  }
  work();
}

// What a drawn set will hold at most (its inputs and a float reference of every output element),
// before drawing it: what the cache must make room for, and the order of drawing (largest first).
size_t estimated_bytes(const Op& op, const CaseSpec& set) {
  try {
    size_t bytes = 0;
    const Signature sig = op.signature(set.problem, set.dtype);
    for (const auto& spec : sig.inputs) bytes += spec.bytes();
    for (const auto& spec : sig.outputs) bytes += static_cast<size_t>(spec.numel()) * sizeof(float);
    return bytes;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

size_t PreparedCase::input_size() const {
  size_t bytes = 0;
  for (const auto& input : input_bytes) bytes += input.size();
  return bytes;
}

size_t PreparedCase::reference_size() const {
  size_t bytes = rows.size() * sizeof(int64_t);
  for (const auto& ref : reference) bytes += ref.size() * sizeof(float);
  return bytes;
}

int64_t PreparedCase::reference_position(size_t output, int64_t index) const {
  const TensorSpec& spec = signature.outputs.at(output);
  if (rows.empty()) return index;
  const int64_t row_len = spec.row_length();
  const auto it = std::lower_bound(rows.begin(), rows.end(), index / row_len);
  if (it == rows.end() || *it != index / row_len) return -1;
  return (it - rows.begin()) * row_len + index % row_len;
}

std::shared_ptr<const PreparedCase> prepare_case(const Op& op, const CaseSpec& set) {
  Cache& c = cache();
  const Key key = key_of(op, set);
  {
    std::lock_guard lock(c.mutex);
    if (auto it = c.kept.find(key); it != c.kept.end()) return it->second;
    if (auto it = c.recent.find(key); it != c.recent.end()) return it->second;
  }
  auto prepared = build(op, set);
  std::lock_guard lock(c.mutex);
  // Keep memory bounded: large cases are only worth keeping for the current problem.
  if (c.recent.size() > 64) c.recent.clear();
  return c.recent.emplace(key, std::move(prepared)).first->second;
}

DrawingPause::DrawingPause() {
  drawing_gate().pause();
}

void DrawingPause::release() {
  if (std::exchange(held_, false)) drawing_gate().resume();
}

bool keep_prepared_cases(const Op& op, const std::vector<CaseSpec>& sets, bool evict) {
  Cache& c = cache();
  std::map<Key, CaseSpec> wanted;
  for (const auto& set : sets) wanted.emplace(key_of(op, set), set);
  std::vector<std::pair<size_t, Key>> missing;
  {
    const Drawing drawing;
    std::lock_guard lock(c.mutex);
    size_t incoming = 0;
    for (const auto& [key, set] : wanted) {
      if (c.kept.contains(key)) continue;
      missing.emplace_back(estimated_bytes(op, set), key);
      incoming += missing.back().first;
    }
    if (!make_room(c, wanted, incoming, evict)) return false;
    if (evict) c.recent.clear();
    ++c.clock;
    for (const auto& [key, set] : wanted) c.last_named[key] = c.clock;
  }
  std::sort(missing.begin(), missing.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<CaseSpec> to_draw;
  std::vector<Key> keys;
  for (const auto& [size, key] : missing) {
    to_draw.push_back(wanted.at(key));
    keys.push_back(key);
  }
  draw_in_parallel(op, to_draw, keys);
  return true;
}

}  // namespace ak
