// Where the wgmma attention's time goes inside a block: the kernel of kernels/cuda/flash_attention.cu
// built with AK_ATTENTION_TRACE (include/autokernel/cuda_attention_trace.cuh), run on random
// inputs with L2 flushed before each call, and the marks of its blocks averaged per item number:
// the wait for Q, the first key tile's scores and softmax (which nothing of the warpgroup's own
// overlaps), the steady tiles, the last P V, the store; and per block the time from entry to the
// first item and from the last store to exit. Without the trace (built without the macro) it
// prints the call's time alone, so that the two builds show what the marks cost.
//
//   bash bench/attention_timeline.sh 8 12 512 64 0        # B H S D causal [kv_heads] [fp16|bf16]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// The GPU's global nanosecond clock, for the blocks' entries and exits (trace_wall); the kernel's
// own source never reads it.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define AK_ATTENTION_TRACE_WALL() global_ns()
#include "../kernels/cuda/flash_attention.cu"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "attention_timeline: %s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

template <typename T>
__global__ void fill_uniform(T* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    x[i] = static_cast<T>(static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

// The plain definition, one thread per query row in fp32, for the check of the kernel's output:
// the largest absolute difference over all of o goes to worst[0], the largest magnitude of the
// definition's output to worst[1] (as the bits of non-negative floats).
template <typename T>
__global__ void reference_error(const T* q, const T* k, const T* v, const T* o, int heads, int kv_heads,
                                int seq, int dim, float scale, int causal, int64_t rows, unsigned* worst) {
  const int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (row >= rows) return;
  const int i = static_cast<int>(row % seq), h = static_cast<int>(row / seq % heads);
  const int64_t b = row / seq / heads, kv = (b * kv_heads + h / (heads / kv_heads)) * seq;
  float out[128] = {}, top = -INFINITY, sum = 0.0f;
  const int keys = causal ? i + 1 : seq;
  for (int j = 0; j < keys; ++j) {
    float dot = 0.0f;
    for (int x = 0; x < dim; ++x)
      dot += static_cast<float>(q[row * dim + x]) * static_cast<float>(k[(kv + j) * dim + x]);
    top = fmaxf(top, dot * scale);
  }
  for (int j = 0; j < keys; ++j) {
    float dot = 0.0f;
    for (int x = 0; x < dim; ++x)
      dot += static_cast<float>(q[row * dim + x]) * static_cast<float>(k[(kv + j) * dim + x]);
    const float p = __expf(dot * scale - top);
    sum += p;
    for (int x = 0; x < dim; ++x) out[x] += p * static_cast<float>(v[(kv + j) * dim + x]);
  }
  float err = 0.0f;
  for (int x = 0; x < dim; ++x) err = fmaxf(err, fabsf(out[x] / sum - static_cast<float>(o[row * dim + x])));
  float top_out = 0.0f;
  for (int x = 0; x < dim; ++x) top_out = fmaxf(top_out, fabsf(out[x] / sum));
  atomicMax(worst, __float_as_uint(err));
  atomicMax(worst + 1, __float_as_uint(top_out));
}

struct Tensor {
  void* data = nullptr;
  ak_tensor view{};
  Tensor(int64_t b, int64_t h, int64_t s, int64_t d, ak_dtype dtype) {
    const int64_t n = b * h * s * d;
    check(cudaMalloc(&data, n * 2), "cudaMalloc");
    view = {data, dtype, 4, {b, h, s, d}, {h * s * d, s * d, d, 1}};
  }
  ~Tensor() { cudaFree(data); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
};

#ifdef AK_ATTENTION_TRACE
// SM cycles per nanosecond, from one block spinning for 50 us of the global timer.
__global__ void clock_rate(double* rate) {
  uint64_t t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  while (t1 - t0 < 50000);
  *rate = static_cast<double>(clock64() - c0) / static_cast<double>(t1 - t0);
}

using ak_attention_sm90::kTraceBlocks;
using ak_attention_sm90::kTraceItems;
struct Marks {  // one call's trace_marks and trace_wall
  long long at[kTraceBlocks][3][kTraceItems + 1][ak_attention_sm90::kTraceMarks];
  unsigned long long wall[kTraceBlocks][2];  // entry, exit (ns, the global clock)
};

// Where the blocks lie within a call, on the global clock: the span from the first block's entry
// to the last one's exit, and how far apart the entries and the exits are (us, means over calls).
void print_wall(const std::vector<Marks>& calls, int blocks, double call_us) {
  double span = 0, entries = 0, exits = 0;
  for (const Marks& call : calls) {
    unsigned long long first_in = ~0ull, last_in = 0, first_out = ~0ull, last_out = 0;
    for (int b = 0; b < std::min(blocks, kTraceBlocks); ++b) {
      first_in = std::min(first_in, call.wall[b][0]), last_in = std::max(last_in, call.wall[b][0]);
      first_out = std::min(first_out, call.wall[b][1]), last_out = std::max(last_out, call.wall[b][1]);
    }
    span += (last_out - first_in) / 1000.0, entries += (last_in - first_in) / 1000.0;
    exits += (last_out - first_out) / 1000.0;
  }
  const double n = static_cast<double>(calls.size());
  std::printf(
      "blocks on the global clock: first entry to last exit %.2f us of the call's %.2f (%.2f us outside "
      "every block: the launch, the first block's start, the end); entries spread over %.2f us, "
      "exits over %.2f us\n",
      span / n, call_us, call_us - span / n, entries / n, exits / n);
}

// The sums behind one row of the table: microseconds between two marks, over blocks and calls.
struct Span {
  double sum = 0;
  long n = 0;
  void add(long long from, long long to, double rate) {
    if (from > 0 && to >= from) sum += (to - from) / rate / 1000.0, ++n;
  }
  double mean() const { return n ? sum / n : 0.0; }
};

void print_timeline(const std::vector<Marks>& calls, int blocks, double rate) {
  using namespace ak_attention_sm90;
  const char* names[] = {"wait for Q", "first S", "first softmax", "steady tiles",
                         "last P V",   "store",   "item"};
  const TraceMark from[] = {kItemBegin,    kQReady,     kFirstScores, kFirstSoftmax,
                            kLastPvIssued, kLastPvDone, kItemBegin};
  const TraceMark to[] = {kQReady, kFirstScores, kFirstSoftmax, kLastPvIssued, kLastPvDone, kStored, kStored};
  Span spans[kTraceItems][7], q_lead[kTraceItems], entry_gap, exit_gap, whole;
  const int traced = std::min(blocks, kTraceBlocks);
  for (const Marks& call : calls)
    for (int b = 0; b < traced; ++b) {
      const auto& m = call.at;
      whole.add(m[b][0][kTraceItems][kItemBegin], m[b][0][kTraceItems][kStored], rate);
      long long last_store = 0;
      for (int wg = 1; wg <= 2; ++wg) {
        entry_gap.add(m[b][wg][kTraceItems][kItemBegin], m[b][wg][0][kQReady], rate);
        for (int r = 0; r < kTraceItems; ++r) {
          for (int s = 0; s < 7; ++s) spans[r][s].add(m[b][wg][r][from[s]], m[b][wg][r][to[s]], rate);
          q_lead[r].add(m[b][0][r][kQReady], m[b][wg][r][kQReady], rate);
          last_store = std::max(last_store, m[b][wg][r][kStored]);
        }
      }
      exit_gap.add(last_store, m[b][0][kTraceItems][kStored], rate);
    }
  std::printf("\nper item of a block, consumer warpgroups' means (us):\n| item | blocks |");
  for (const char* n : names) std::printf(" %s |", n);
  std::printf(" Q copy to ready |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int r = 0; r < kTraceItems; ++r) {
    if (spans[r][6].n == 0) continue;
    std::printf("| %d | %ld |", r, spans[r][6].n / 2 / static_cast<long>(calls.size()));
    for (const Span& s : spans[r]) std::printf(" %.2f |", s.mean());
    std::printf(" %.2f |\n", q_lead[r].mean());
  }
  std::printf("\nblock: entry to the first Q %.2f us, last store to exit %.2f us, entry to exit %.2f us\n",
              entry_gap.mean(), exit_gap.mean(), whole.mean());
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: attention_timeline B H S D [causal 0|1] [kv_heads] [fp16|bf16]\n");
    return 2;
  }
  const int64_t b = std::atoll(argv[1]), h = std::atoll(argv[2]), s = std::atoll(argv[3]),
                d = std::atoll(argv[4]);
  const int causal = argc > 5 ? std::atoi(argv[5]) : 0;
  const int64_t kv = argc > 6 ? std::atoll(argv[6]) : h;
  const std::string type = argc > 7 ? argv[7] : "bf16";
  if (b < 1 || h < 1 || s < 1 || (d != 64 && d != 128) || kv < 1 || h % kv != 0 ||
      (type != "fp16" && type != "bf16")) {
    std::fprintf(stderr,
                 "attention_timeline: B, H, S >= 1, D 64 or 128, kv_heads dividing H, fp16 or bf16\n");
    return 2;
  }
  const ak_dtype dtype = type == "fp16" ? AK_F16 : AK_BF16;
  Tensor q(b, h, s, d, dtype), k(b, kv, s, d, dtype), v(b, kv, s, d, dtype), o(b, h, s, d, dtype);
  uint32_t seed = 1;
  for (Tensor* t : {&q, &k, &v}) {
    const int64_t n = t->view.shape[0] * t->view.shape[1] * t->view.shape[2] * t->view.shape[3];
    if (dtype == AK_F16)
      fill_uniform<<<1024, 256>>>(static_cast<__half*>(t->data), n, seed++);
    else
      fill_uniform<<<1024, 256>>>(static_cast<__nv_bfloat16*>(t->data), n, seed++);
  }
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  ak_call call{};
  call.abi_version = AK_ABI_VERSION;
  call.n_inputs = 3, call.n_outputs = 1, call.n_scalars = 2;
  call.inputs[0] = q.view, call.inputs[1] = k.view, call.inputs[2] = v.view, call.outputs[0] = o.view;
  call.scalars[0] = 1.0 / std::sqrt(static_cast<double>(d)), call.scalars[1] = causal;
  call.stream = stream;
  const size_t flush_bytes = size_t{256} << 20;  // five times the H100's and H200's L2
  void* flush = nullptr;
  check(cudaMalloc(&flush, flush_bytes), "cudaMalloc");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 5; ++i)
    if (ak_launch(&call) != AK_OK) {
      std::fprintf(stderr, "attention_timeline: the kernel refused the call\n");
      return 1;
    }
  check(cudaStreamSynchronize(stream), "warm-up");
  const int calls = 30;
  std::vector<float> us;
#ifdef AK_ATTENTION_TRACE
  std::vector<Marks> marks(calls);
  void *marks_device = nullptr, *wall_device = nullptr;
  check(cudaGetSymbolAddress(&marks_device, ak_attention_sm90::trace_marks), "cudaGetSymbolAddress");
  check(cudaGetSymbolAddress(&wall_device, ak_attention_sm90::trace_wall), "cudaGetSymbolAddress");
#endif
  for (int i = 0; i < calls; ++i) {
    check(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream), "flush");
#ifdef AK_ATTENTION_TRACE
    check(cudaMemsetAsync(marks_device, 0, sizeof(Marks::at), stream), "clear marks");
    check(cudaMemsetAsync(wall_device, 0, sizeof(Marks::wall), stream), "clear marks");
#endif
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    ak_launch(&call);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "the call");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    us.push_back(ms * 1000.0f);
#ifdef AK_ATTENTION_TRACE
    check(cudaMemcpy(marks[i].at, marks_device, sizeof(Marks::at), cudaMemcpyDeviceToHost), "read marks");
    check(cudaMemcpy(marks[i].wall, wall_device, sizeof(Marks::wall), cudaMemcpyDeviceToHost), "read marks");
#endif
  }
  // The output checked before any figure is printed: a fast wrong kernel explains nothing.
  unsigned* worst_device = nullptr;
  unsigned worst_bits[2] = {};
  check(cudaMalloc(&worst_device, sizeof(worst_bits)), "cudaMalloc");
  check(cudaMemset(worst_device, 0, sizeof(worst_bits)), "cudaMemset");
  const int64_t rows = b * h * s;
  const auto blocks_for = [](int64_t n) { return static_cast<unsigned>((n + 127) / 128); };
  if (dtype == AK_F16)
    reference_error<<<blocks_for(rows), 128>>>(
        static_cast<const __half*>(q.data), static_cast<const __half*>(k.data),
        static_cast<const __half*>(v.data), static_cast<const __half*>(o.data), h, kv, s, d, call.scalars[0],
        causal, rows, worst_device);
  else
    reference_error<<<blocks_for(rows), 128>>>(
        static_cast<const __nv_bfloat16*>(q.data), static_cast<const __nv_bfloat16*>(k.data),
        static_cast<const __nv_bfloat16*>(v.data), static_cast<const __nv_bfloat16*>(o.data), h, kv, s, d,
        call.scalars[0], causal, rows, worst_device);
  check(cudaMemcpy(worst_bits, worst_device, sizeof(worst_bits), cudaMemcpyDeviceToHost), "reference check");
  cudaFree(worst_device);
  float worst[2];
  std::memcpy(worst, worst_bits, sizeof(worst));
  // A row stored from the wrong item or half-summed differs by about the output's own size; the
  // 16-bit P and the rounded output stay within a few units of the dtype's last place of it.
  const bool correct = worst[0] <= (dtype == AK_F16 ? 0.005f : 0.02f) * worst[1];
  std::printf("output against the fp32 definition: largest difference %.2e, largest output %.2e (%s)\n",
              worst[0], worst[1], correct ? "PASS" : "FAIL");
  if (!correct) return 1;
  std::sort(us.begin(), us.end());
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
#ifdef AK_ATTENTION_TRACE
  const char* traced = "traced";
#else
  const char* traced = "untraced";
#endif
  std::printf(
      "%lldx%lldx%lldx%lld%s kv_heads=%lld %s, %s: median %.2f us (min %.2f) over %d calls, L2 flushed\n",
      static_cast<long long>(b), static_cast<long long>(h), static_cast<long long>(s),
      static_cast<long long>(d), causal ? " causal" : "", static_cast<long long>(kv), type.c_str(), traced,
      us[us.size() / 2], us[0], calls);
#ifdef AK_ATTENTION_TRACE
  double* rate_device = nullptr;
  double rate = 0;
  check(cudaMalloc(&rate_device, sizeof(double)), "cudaMalloc");
  clock_rate<<<1, 1>>>(rate_device);
  check(cudaMemcpy(&rate, rate_device, sizeof(double), cudaMemcpyDeviceToHost), "clock rate");
  std::printf("SM clock while spinning: %.3f GHz\n", rate);
  print_timeline(marks, sms, rate);
  print_wall(marks, sms, us[us.size() / 2]);
  cudaFree(rate_device);
#endif
  cudaFree(flush);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return 0;
}
