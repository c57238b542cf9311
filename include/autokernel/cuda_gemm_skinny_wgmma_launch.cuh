// Which of the wgmma forms of the skinny products takes a call (kernels/cuda/matmul.cu's
// SKINNY_WGMMA, SKINNY_STREAM_K and SKINNY_MULTICAST): whole tiles over a persistent grid or
// stream-K (cuda_gemm_skinny_wgmma.cuh), or whole tiles in clusters of two sharing A
// (cuda_gemm_skinny_multicast.cuh); AK_ERR_UNSUPPORTED sends the call to the other skinny forms.
#pragma once

#include "autokernel/cuda_gemm_skinny_multicast.cuh"
#include "autokernel/cuda_gemm_skinny_wgmma.cuh"

namespace ak_gemm::skinny_wgmma {

// How the form takes a call: width 32 or 64 forces whole tiles of that width from 17 rows of A
// (split_k as launch's); stream_k 64 or 128 forces stream-K at that width (width then unused);
// multicast 1 runs whole tiles without a K split in clusters of two sharing A
// (cuda_gemm_skinny_multicast.cuh) wherever whole tiles take the call.
// Chosen (width 0, stream_k 1) where the H200 measured the form faster (docs/benchmarks.md,
// twenty-eighth and twenty-ninth sessions), past 32 rows of A: whole tiles of 32 where they make
// between half a wave and one (64 x 4096 x 4096: 15.4 against 18.2 us, cuBLAS 14.4), of 64 where
// those do (64 x 8192 x 4096: 22.8 against 26.9, cuBLAS 21.8), stream-K at 64 where tiles of 64
// make between one and two waves (64 x 11008 x 4096: 32.6 against 35.6 with whole tiles, cuBLAS
// 26.8; thirtieth session); elsewhere AK_ERR_UNSUPPORTED (the caller's other paths; stream-K lost there: 64 x
// 32000 x 4096 77.8 against 72.4). stream_k 0: whole tiles of 64 up to one and a half waves instead.
template <typename T>
int launch_skinny_wgmma(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k,
                        int width, int stream_k, int multicast) {
  if (stream_k > 1)
    return stream_k == 128 ? launch_stream_k<T, 128, 8>(p, store, stream)
                           : launch_stream_k<T, 64, 12>(p, store, stream);
  if (width == 0) {
    const int64_t sms = device_attribute(cudaDevAttrMultiProcessorCount);
    const int64_t narrow = (p.n + 31) / 32, wide = (p.n + 63) / 64;
    if (p.m <= 32) return AK_ERR_UNSUPPORTED;
    if (2 * narrow > sms && narrow <= sms)
      width = 32;
    else if (2 * wide > sms && wide <= sms)
      width = 64;
    else if (stream_k == 1 && wide > sms && wide <= 2 * sms)
      return launch_stream_k<T, 64, 12>(p, store, stream);
    else if (stream_k == 0 && 2 * wide > sms && 2 * wide <= 3 * sms)
      width = 64;
    else
      return AK_ERR_UNSUPPORTED;
    if (split_k == 0) split_k = 1;
  }
  if (multicast != 0)
    return width == 32 ? launch_multicast<T, 32, 16>(p, store, stream)
                       : launch_multicast<T, 64, 12>(p, store, stream);
  return width == 32 ? launch<T, 32, 16>(p, store, stream, split_k)
                     : launch<T, 64, 12>(p, store, stream, split_k);
}

}  // namespace ak_gemm::skinny_wgmma
