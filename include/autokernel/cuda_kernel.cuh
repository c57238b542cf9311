// Helpers for CUDA kernel modules (kernels/cuda/*.cu). C++17, header-only; the only state is the
// pool release threshold each device was given (alloc_workspace).
//
// The contract a module keeps (see abi.h): `extern "C" int ak_launch(const ak_call*)` checks the
// call (counts, dtypes, shapes, strides) and returns AK_ERR_UNSUPPORTED for what it does not
// handle, enqueues all its work on (cudaStream_t)call->stream and nothing else (no allocation, no
// synchronization: the harness may hold the stream while it looks at memory), and returns
// AK_ERR_LAUNCH when a launch fails (check_launch()). Arithmetic on 16-bit types is done in
// float; results are rounded once, on the store.
//
// What is here:
//   dispatch_float_dtype(dtype, f)   calls f(TypeTag<T>{}) with T = __half, __nv_bfloat16 or float
//   to_float / from_float<T>         element conversions (round to nearest even on the way out)
//   Vec16<T>, load_vec16, store_vec16
//                                    16-byte accesses (one LDG.E.128/STG.E.128 per thread); only
//                                    for addresses that are 16-byte aligned: see can_vectorize()
//   warp_sum / group_sum             float sums over a warp / a group of warps, deterministic
//   RowSlot, row_slot<RowThreads, RowsPerBlock>(rows)
//                                    which row a thread's group of a row-per-group block handles
//   fast_exp2, kLog2e                2^v through ex2.approx (results below 2^-126 flush to zero)
//   check_launch()                   AK_ERR_LAUNCH when the last launch failed
//   alloc_workspace / free_workspace stream-ordered scratch from the device's default pool, kept
//                                    pooled across synchronizations; with_workspace around a use
//                                    (a module that defines KEEP_WORKSPACE to 1 before including
//                                    this keeps one workspace per stream between calls instead:
//                                    KeptWorkspaces)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "autokernel/abi.h"

namespace ak_cuda {

template <typename T>
struct TypeTag {
  using type = T;
};

// Runs `f(TypeTag<T>{})` for the element type of a float dtype and returns its result; returns
// AK_ERR_UNSUPPORTED for integer or unknown dtypes. Use: dispatch_float_dtype(x.dtype, [&](auto
// tag) { using T = typename decltype(tag)::type; ... return AK_OK; }).
template <typename F>
inline int dispatch_float_dtype(int32_t dtype, F&& f) {
  switch (dtype) {
    case AK_F16: return f(TypeTag<__half>{});
    case AK_BF16: return f(TypeTag<__nv_bfloat16>{});
    case AK_F32: return f(TypeTag<float>{});
    default: return AK_ERR_UNSUPPORTED;
  }
}

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// 16 bytes of T held in four 32-bit registers. Index its elements only with compile-time
// constants (unrolled loops), or it moves to local memory.
template <typename T>
struct Vec16 {
  static constexpr int kSize = 16 / static_cast<int>(sizeof(T));
  uint4 raw;

  __device__ __forceinline__ void to_floats(float (&out)[kSize]) const {
    const T* elements = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < kSize; ++i) out[i] = to_float(elements[i]);
  }

  __device__ __forceinline__ static Vec16 from_floats(const float (&in)[kSize]) {
    Vec16 v;
    T* elements = reinterpret_cast<T*>(&v.raw);
#pragma unroll
    for (int i = 0; i < kSize; ++i) elements[i] = from_float<T>(in[i]);
    return v;
  }
};

// `p` must be 16-byte aligned. The read-only form goes through the non-coherent cache: only for
// memory that no thread writes during the kernel (inputs).
template <typename T>
__device__ __forceinline__ Vec16<T> load_vec16(const T* p) {
  return Vec16<T>{*reinterpret_cast<const uint4*>(p)};
}
template <typename T>
__device__ __forceinline__ Vec16<T> load_vec16_readonly(const T* p) {
  return Vec16<T>{__ldg(reinterpret_cast<const uint4*>(p))};
}
template <typename T>
__device__ __forceinline__ void store_vec16(T* p, const Vec16<T>& v) {
  *reinterpret_cast<uint4*>(p) = v.raw;
}

__host__ __device__ __forceinline__ bool is_aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Whether rows of `cols` elements starting every `row_stride` elements from `base` can all be
// read with Vec16: the base is aligned and both lengths are whole vectors.
template <typename T>
__host__ __device__ __forceinline__ bool can_vectorize(const T* base, int64_t cols, int64_t row_stride) {
  constexpr int64_t kSize = Vec16<T>::kSize;
  return is_aligned16(base) && cols % kSize == 0 && row_stride % kSize == 0;
}

// The sum of `v` over the 32 lanes of the warp, in every lane. Deterministic: each butterfly
// step adds the same two values in both lanes of a pair, so every lane ends with the same bits.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of `v` over a group of GROUP consecutive threads (GROUP a multiple of 32 that divides
// blockDim.x), returned to every thread of the group. `scratch` holds GROUP / 32 floats of
// shared memory for this group. Every thread of the block must call it together (it uses
// __syncthreads when GROUP > 32); put a __syncthreads between two calls that share scratch.
template <int GROUP>
__device__ __forceinline__ float group_sum(float v, float* scratch) {
  static_assert(GROUP % 32 == 0, "a group is whole warps");
  v = warp_sum(v);
  if constexpr (GROUP == 32) {
    return v;
  } else {
    if (threadIdx.x % 32 == 0) scratch[(threadIdx.x % GROUP) / 32] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < GROUP / 32; ++w) total += scratch[w];
    return total;
  }
}

// AK_ERR_LAUNCH when the last launch of this thread failed (bad configuration, too many
// resources, or an earlier device fault), AK_OK otherwise.
inline int check_launch() {
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}

// `bytes` of stream-ordered scratch from the current device's default pool (cudaMallocAsync on
// `stream`); false, with the error cleared, when it cannot be had. The pool's release threshold
// is raised (never lowered) to the largest workspace asked for, once per size: at its default of
// 0 the pool hands the memory back to the driver at every synchronization, and the next call
// maps hundreds of MB afresh.
inline bool alloc_workspace(void** p, size_t bytes, cudaStream_t stream) {
  constexpr int kMaxDevices = 64;
  static std::atomic<uint64_t> kept[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess && device >= 0 && device < kMaxDevices &&
      kept[device].load() < bytes) {
    cudaMemPool_t pool = nullptr;
    uint64_t threshold = 0, wanted = bytes;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess &&
        (threshold >= wanted ||
         cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &wanted) == cudaSuccess))
      kept[device].store(bytes);
    else
      (void)cudaGetLastError();  // a pool that keeps less only costs time
  }
  if (cudaMallocAsync(p, bytes, stream) == cudaSuccess) return true;
  (void)cudaGetLastError();  // the failure is reported here, not left for the next launch
  return false;
}

// Gives a workspace back to the pool once the work enqueued before on `stream` is done.
inline bool free_workspace(void* p, cudaStream_t stream) {
  return cudaFreeAsync(p, stream) == cudaSuccess;
}

// One workspace per (device, stream), kept between calls and grown when a call needs more, so that
// a call enqueues no pool alloc and free around its kernels. Calls on one stream run in order, so
// they can share it; the per-thread default stream is a different stream in each thread, so there
// the thread is part of the key. Freed when the module is unloaded.
class KeptWorkspaces {
 public:
  KeptWorkspaces() = default;
  KeptWorkspaces(const KeptWorkspaces&) = delete;
  KeptWorkspaces& operator=(const KeptWorkspaces&) = delete;
  ~KeptWorkspaces() {
    for (auto& entry : kept_) (void)cudaFree(entry.second.p);  // errors at process exit are moot
  }

  // At least `bytes` for work on `stream`, or nullptr (the error cleared) when it cannot be had.
  void* get(size_t bytes, cudaStream_t stream) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    const std::thread::id thread =
        stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id{};
    std::lock_guard<std::mutex> lock(mutex_);
    Workspace& w = kept_[std::make_tuple(device, stream, thread)];
    if (w.bytes < bytes) {
      if (w.p != nullptr && !free_workspace(w.p, stream)) (void)cudaGetLastError();
      w = {};
      if (!alloc_workspace(&w.p, bytes, stream)) return nullptr;
      w.bytes = bytes;
    }
    return w.p;
  }

 private:
  struct Workspace {
    void* p = nullptr;
    size_t bytes = 0;
  };
  std::mutex mutex_;
  std::map<std::tuple<int, cudaStream_t, std::thread::id>, Workspace> kept_;
};

inline KeptWorkspaces& kept_workspaces() {
  static KeptWorkspaces kept;
  return kept;
}

// Whether work enqueued on `stream` is being captured into a CUDA graph: a graph's workspace must
// be its own (a kept one would be shared by every replay and by later eager calls).
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // (a legacy-stream query during another stream's capture: take the graph's path)
  }
  return status != cudaStreamCaptureStatusNone;
}

// Kept workspaces stay at most this size: a larger one (a split-K of many splits over a wide
// output) goes back to the pool after its call, as the pool can hand it to the next module.
constexpr size_t kMaxKeptWorkspaceBytes = size_t{16} << 20;

// rc = use(p) with `bytes` of workspace p (alloc_workspace) that goes back to the pool after the
// work use enqueued: rc, else AK_ERR_LAUNCH when the workspace cannot be had or given back. With
// KEEP_WORKSPACE set by the module, outside a graph's capture and up to kMaxKeptWorkspaceBytes: p is
// the stream's kept workspace.
template <class Use>
int with_workspace(size_t bytes, cudaStream_t stream, Use&& use) {
#if defined(KEEP_WORKSPACE) && KEEP_WORKSPACE
  if (bytes <= kMaxKeptWorkspaceBytes && !capturing(stream)) {
    void* kept = kept_workspaces().get(bytes, stream);
    return kept == nullptr ? AK_ERR_LAUNCH : use(kept);
  }
#endif
  void* p = nullptr;
  if (!alloc_workspace(&p, bytes, stream)) return AK_ERR_LAUNCH;
  const int rc = use(p);
  const bool freed = free_workspace(p, stream);
  return rc != AK_OK ? rc : (freed ? AK_OK : AK_ERR_LAUNCH);
}

inline cudaStream_t stream_of(const ak_call* call) {
  return static_cast<cudaStream_t>(call->stream);
}

// Row-per-group kernels: a block of RowsPerBlock groups of RowThreads threads, one row each.
// Rows past the end are inactive but still take part in the block's barriers.
struct RowSlot {
  int group, lane;  // the group's index in the block, the thread's in the group
  int64_t row;
  bool active;
};

template <int RowThreads, int RowsPerBlock>
__device__ __forceinline__ RowSlot row_slot(int64_t rows) {
  const int group = threadIdx.x / RowThreads;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * RowsPerBlock + group;
  return {group, static_cast<int>(threadIdx.x % RowThreads), row, row < rows};
}

constexpr float kLog2e = 1.4426950408889634f;

// 2^v in one MUFU.EX2; results below 2^-126 flush to zero, far below anything a softmax-style
// sum that holds its maximum's own term of 1 can see.
__device__ __forceinline__ float fast_exp2(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

}  // namespace ak_cuda
