// fused_mlp, CUDA: y = (silu(x w_gate^T) * (x w_up^T)) w_down^T, silu(g) = g / (1 + exp(-g)).
// Inputs x[M, D], w_gate[F, D], w_up[F, D], w_down[D, F] (torch.nn.Linear layout: inner strides
// 1, row strides free, w_gate and w_up with the same row stride); output y[M, D] of x's dtype; no
// scalars. fp16, bf16 and fp32 (fp32 stays fp32: FFMA, no TF32), any M, D, F >= 1.
// Machinery in include/autokernel/cuda_gemm.cuh, cuda_gemm_sm90.cuh and cuda_gemm_simt.cuh.
//
// Two launches on the stream, with the intermediate h[M, F] of x's dtype in the workspace the
// caller hands over (fused_mlp's signature gives it: call->workspace), rounded once as PyTorch
// eager rounds it; no allocation of its own, so a CUDA graph of the call holds just the two
// kernels:
//   up      h = silu(x w_gate^T) * (x w_up^T): one main loop reads an x tile once and the gate
//           and up tiles of the same F columns, keeping both accumulators; the epilogue applies
//           silu(g) * u in fp32 and rounds.
//   down    y = h w_down^T.
// Variants, picked per call (as in matmul.cu):
//   mma     fp16/bf16, mma.sync.m16n8k16 from swizzled shared memory, STAGES-deep cp.async
//           pipeline with zero-filled edges; needs 16-byte aligned rows and D, F multiples of 8.
//   mma, element loads
//           the same with element-by-element tile loads (odd D or F, misaligned views).
//   wgmma   fp16/bf16 when WGMMA = 1 and the bases and row strides are 16-byte aligned (any
//           M, D, F): Hopper warpgroup MMA with TMA and an mbarrier pipeline on a persistent
//           grid (include/autokernel/cuda_gemm_sm90.cuh); up takes 128 x 128 tiles of gate and
//           of up (two m64n128 accumulators per consumer thread), STAGES stages; down 128 x 64,
//           128 x 192 or 128 x 256 tiles with 5, 4 or 3 stages, the width per call as matmul's
//           BLOCK_N = 0 (sm90::auto_tile_width); both 64 deep. Other calls take the mma variants
//           with their default tiles.
//   simt    fp32 FFMA: 128 x 64 tiles (per weight matrix) for up, 128 x 128 for down.
//   skinny  fp16/bf16 decode, when SKINNY = 1 (the default) and M <= SKINNY_MAX_M, rows 16-byte
//           aligned, D and F multiples of 8: a tile of 128 rows would be mostly padding, and the
//           down product's D columns make few tiles of a long K (1 x 4096 x 11008: 32 tiles of
//           K = 11008, 176.6 us on the H200 where the weights' bytes take 57). Four launches:
//           gate and up as matmul.cu's defaults take such products (cuda_gemm_skinny.cuh, from
//           33 rows the wgmma forms of cuda_gemm_skinny_wgmma_launch.cuh where chosen; each
//           weight read once) into a pool workspace of 2 x M x F, each rounded to T as eager
//           rounds its two Linears; h = silu(gate) * up in fp32, rounded once; then the down
//           product, skinny too. Split-K there in a float workspace, added in split order.
// No atomics: repeated runs are bitwise equal.
//
// Tuning parameters (-D definitions; the defaults below let the file compile alone; fp32 ignores
// them):
//   BLOCK_M, BLOCK_N  output tile of an up block (BLOCK_N columns of gate and of up); a down
//                     block covers BLOCK_M x 2 BLOCK_N, so both keep the same accumulators
//   BLOCK_K           k-depth of a shared-memory stage
//   WARPS_M, WARPS_N  warps along M and N
//   STAGES            shared-memory stages (STAGES - 1 tiles in flight)
//   WGMMA             1: the wgmma variant, whose tiles are fixed (BLOCK_M x BLOCK_N x BLOCK_K =
//                     128 x 128 x 64 there, WARPS_* at 2 x 4); STAGES still sets up's depth
//   TMA_STORE         wgmma only, 1: up and down store their outputs through two 64 x BN
//                     staging tiles by TMA, overlapped with their next tiles (a launch whose
//                     stages leave no room for them stores from registers); 0: from registers
//   SKINNY            1: the skinny form for decode calls (above); 0: the tiled forms for every
//                     M. Not a @tune: it changes nothing at the M of a prefill.
//   SKINNY_MAX_M      the largest M the skinny form takes (at most 64).
//   SKINNY_WIDEST     the widest tile of W (64 or 128 rows) its products take from 33 rows of A, as
//                     matmul.cu's: 128 (the default) took 64 x 4096 x 11008 from 128.1 to 121.4 us
//                     on the H100, PyTorch's 121.4 (docs/benchmarks.md, thirty-fourth session).
//                     Not a @tune.
//
// @tune BLOCK_M: 64, 128, 256
// @tune BLOCK_N: 32, 64, 128
// @tune BLOCK_K: 32, 64
// @tune WARPS_M: 1, 2, 4
// @tune WARPS_N: 1, 2, 4
// @tune STAGES: 2, 3, 4, 5
// @tune WGMMA: 0, 1
// @tune TMA_STORE: 0, 1
// @require TMA_STORE == 0 || WGMMA == 1
// @require BLOCK_M % (WARPS_M * 16) == 0 && BLOCK_N % (WARPS_N * 16) == 0
// @require WARPS_M * WARPS_N >= 4
// @require BLOCK_M / WARPS_M <= 64 && BLOCK_N / WARPS_N <= 64
// @require WARPS_M * WARPS_N * ((BLOCK_M / WARPS_M) * (BLOCK_N / WARPS_N) / 16 + 72) <= 2048
// @require (BLOCK_M / WARPS_M) * (BLOCK_N / WARPS_N) <= 2048
// @require STAGES * (BLOCK_M + 2 * BLOCK_N) * BLOCK_K * 2 <= 226 * 1024
// @require WGMMA == 0 || (BLOCK_M == 128 && BLOCK_N == 128 && BLOCK_K == 64 && STAGES >= 3)
// @require WGMMA == 0 || (WARPS_M == 2 && WARPS_N == 4)
#include "autokernel/cuda_gemm.cuh"
#include "autokernel/cuda_gemm_simt.cuh"
#include "autokernel/cuda_gemm_skinny.cuh"
#include "autokernel/cuda_gemm_skinny_wgmma_launch.cuh"
#include "autokernel/cuda_gemm_sm90_launch.cuh"

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef WGMMA
#define WGMMA 1
#endif
#ifndef TMA_STORE
#define TMA_STORE 1
#endif
#ifndef SKINNY
#define SKINNY 1
#endif
#ifndef SKINNY_MAX_M
#define SKINNY_MAX_M 64
#endif
#ifndef SKINNY_WIDEST
#define SKINNY_WIDEST 128
#endif

namespace {

using namespace ak_gemm;

// With WGMMA the calls the wgmma kernels cannot take get the default mma tiles.
using UpTile = std::conditional_t<WGMMA != 0, MmaTile<128, 64, 32, 2, 4, 4>,
                                  MmaTile<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES>>;
using DownTile = std::conditional_t<WGMMA != 0, MmaTile<128, 128, 32, 2, 4, 4>,
                                    MmaTile<BLOCK_M, 2 * BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES>>;

// up: both B matrices in 128-wide tiles (two accumulators per thread), STAGES deep.
template <typename T, class Epi>
int launch_up(const GemmProblem<T, 2>& p, const Epi& epi, cudaStream_t stream) {
  if constexpr (WGMMA != 0) {
    if (sm90::wgmma_eligible(p)) {
      const int rc = sm90::launch_wgmma_gemm<T, BLayout::NK, 2, 128, STAGES, TMA_STORE != 0>(p, epi, stream);
      if (rc != AK_ERR_UNSUPPORTED) return rc;
    }
  }
  return launch_mma_gemm<T, BLayout::NK, 2, UpTile>(p, epi, stream);
}

// down: the tile width per call, as matmul's BLOCK_N = 0 (at the compact LLaMA's 4096 x 768, 128
// tiles of 192: one wave where 128-wide tiles took 1.45).
template <typename T>
int launch_down(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream) {
  if constexpr (WGMMA != 0) {
    if (sm90::wgmma_eligible(p)) {
      const int rc = sm90::launch_wgmma_gemm_auto_width<T, BLayout::NK, TMA_STORE != 0>(p, store, stream);
      if (rc != AK_ERR_UNSUPPORTED) return rc;
    }
  }
  return launch_mma_gemm<T, BLayout::NK, 1, DownTile>(p, store, stream);
}

// h[m, f] = silu(gate) * up, in fp32, rounded once to T. Saturates cleanly: exp(-g) = inf for
// very negative g gives g / inf = -0, and exp(-g) = 0 for large g gives g.
template <typename T>
struct SwigluStore {
  StoreC<T> out;

  __device__ __forceinline__ static float swiglu(float gate, float up) {
    return gate / (1.0f + expf(-gate)) * up;
  }

  __device__ __forceinline__ static float combine(const float (&v)[2]) { return swiglu(v[0], v[1]); }
  const StoreC<T>& target() const { return out; }

  __device__ __forceinline__ void operator()(int row, int col, const float (&v0)[2],
                                             const float (&v1)[2]) const {
    const float h0[1] = {swiglu(v0[0], v0[1])};
    const float h1[1] = {swiglu(v1[0], v1[1])};
    out(row, col, h0, h1);
  }
};

// h = silu(g) * u over `count` elements (a multiple of 8, 16-byte aligned buffers), 8 a thread.
template <typename T>
__global__ void __launch_bounds__(256) swiglu_kernel(const T* g, const T* u, T* h, int64_t count) {
  constexpr int kVec = ak_cuda::Vec16<T>::kSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kVec;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; i < count;
       i += stride) {
    float gate[kVec], up[kVec], out[kVec];
    ak_cuda::load_vec16_readonly(g + i).to_floats(gate);
    ak_cuda::load_vec16_readonly(u + i).to_floats(up);
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[j] = SwigluStore<T>::swiglu(gate[j], up[j]);
    ak_cuda::store_vec16(h + i, ak_cuda::Vec16<T>::from_floats(out));
  }
}

// One product of the skinny form: c = A W^T as matmul.cu's defaults take it at these rows (from 33
// rows the wgmma form's whole tiles where a width up to SKINNY_WIDEST makes one wave),
// else the skinny products in registers or through shared memory.
template <typename T>
int skinny_product(const GemmProblem<T, 1>& p, T* c, int64_t ldc, cudaStream_t stream,
                   const skinny::RowLimits& limits) {
  const int rc =
      skinny_wgmma::launch_skinny_wgmma(p, make_store(c, ldc, p.m, p.n), stream, 0, 0, 1, 0, SKINNY_WIDEST);
  return rc != AK_ERR_UNSUPPORTED ? rc
                                  : skinny::launch_skinny_gemm<T, BLayout::NK>(p, c, ldc, stream, 0, limits);
}

// The skinny form (see the header): AK_ERR_UNSUPPORTED, with nothing enqueued, for calls it does
// not take.
template <typename T>
int launch_skinny(const GemmProblem<T, 2>& up, const GemmProblem<T, 1>& down, T* h, const StoreC<T>& y,
                  cudaStream_t stream) {
  if constexpr (SKINNY == 0 || sizeof(T) != 2) {
    return AK_ERR_UNSUPPORTED;
  } else {
    const skinny::RowLimits limits{0, SKINNY_MAX_M, true, 0};
    const int64_t m = up.m, f = up.n;
    const GemmProblem<T, 1> gate{up.a, {up.b[0]}, up.lda, up.ldb, up.m, up.n, up.k};
    const GemmProblem<T, 1> upper{up.a, {up.b[1]}, up.lda, up.ldb, up.m, up.n, up.k};
    if (!skinny::eligible<T, BLayout::NK>(gate, limits) || !skinny::eligible<T, BLayout::NK>(upper, limits) ||
        !skinny::eligible<T, BLayout::NK>(down, limits))
      return AK_ERR_UNSUPPORTED;
    return ak_cuda::with_workspace(2 * m * f * sizeof(T), stream, [&](void* ws) {
      T* g = static_cast<T*>(ws);
      T* u = g + m * f;
      int rc = skinny_product(gate, g, f, stream, limits);
      if (rc == AK_OK) rc = skinny_product(upper, u, f, stream, limits);
      if (rc != AK_OK) return rc;
      const int64_t threads = (m * f + 7) / 8;
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((threads + 255) / 256, 4096));
      swiglu_kernel<T><<<blocks, 256, 0, stream>>>(g, u, h, m * f);
      rc = ak_cuda::check_launch();
      return rc == AK_OK ? skinny_product(down, y.c, y.ldc, stream, limits) : rc;
    });
  }
}

bool is_matrix(const ak_tensor& t, int64_t rows, int64_t cols) {
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols) return false;
  return (cols == 1 || t.strides[1] == 1) && t.strides[0] >= 0;
}

bool shapes_fit(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& w_gate = call->inputs[1];
  if (x.ndim != 2 || w_gate.ndim != 2) return false;
  const int64_t m = x.shape[0], d = x.shape[1], f = w_gate.shape[0];
  constexpr int64_t kMax = INT_MAX - 512;
  if (m < 1 || d < 1 || f < 1 || m > kMax || d > kMax || f > kMax) return false;
  if (call->inputs[2].strides[0] != w_gate.strides[0]) return false;  // one ldb for gate and up
  return is_matrix(x, m, d) && is_matrix(w_gate, f, d) && is_matrix(call->inputs[2], f, d) &&
         is_matrix(call->inputs[3], d, f) && is_matrix(call->outputs[0], m, d);
}

template <typename T>
int launch_both(const ak_call* call, T* h, cudaStream_t stream) {
  const ak_tensor& x = call->inputs[0];
  const ak_tensor& w_down = call->inputs[3];
  const ak_tensor& y = call->outputs[0];
  const int m = static_cast<int>(x.shape[0]), d = static_cast<int>(x.shape[1]);
  const int f = static_cast<int>(call->inputs[1].shape[0]);
  const GemmProblem<T, 2> up{
      static_cast<const T*>(x.data),
      {static_cast<const T*>(call->inputs[1].data), static_cast<const T*>(call->inputs[2].data)},
      x.strides[0],
      call->inputs[1].strides[0],
      m,
      f,
      d};
  const SwigluStore<T> swiglu{make_store(h, f, m, f)};
  const GemmProblem<T, 1> down{h, {static_cast<const T*>(w_down.data)}, f, w_down.strides[0], m, d, f};
  const StoreC<T> store = make_store(static_cast<T*>(y.data), y.strides[0], m, d);
  int rc = AK_OK;
  if constexpr (sizeof(T) == 4) {
    rc = launch_simt_gemm<BLayout::NK, 2>(up, swiglu, stream);
    if (rc == AK_OK) rc = launch_simt_gemm<BLayout::NK, 1>(down, store, stream);
  } else {
    rc = launch_skinny(up, down, h, store, stream);
    if (rc != AK_ERR_UNSUPPORTED) return rc;
    rc = launch_up(up, swiglu, stream);
    if (rc == AK_OK) rc = launch_down(down, store, stream);
  }
  return rc;
}

template <typename T>
int launch(const ak_call* call) {
  const int64_t h_bytes =
      call->inputs[0].shape[0] * call->inputs[1].shape[0] * static_cast<int64_t>(sizeof(T));
  if (call->workspace == nullptr || call->workspace_bytes < h_bytes) return AK_ERR_UNSUPPORTED;
  return launch_both(call, static_cast<T*>(call->workspace), ak_cuda::stream_of(call));
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  if (call == nullptr || call->abi_version != AK_ABI_VERSION) return AK_ERR_UNSUPPORTED;
  if (call->n_inputs != 4 || call->n_outputs != 1) return AK_ERR_UNSUPPORTED;
  const int32_t dtype = call->inputs[0].dtype;
  for (int i = 1; i < 4; ++i)
    if (call->inputs[i].dtype != dtype) return AK_ERR_UNSUPPORTED;
  if (call->outputs[0].dtype != dtype || !shapes_fit(call)) return AK_ERR_UNSUPPORTED;
  return ak_cuda::dispatch_float_dtype(dtype,
                                       [&](auto tag) { return launch<typename decltype(tag)::type>(call); });
}
