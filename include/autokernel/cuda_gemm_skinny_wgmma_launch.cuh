// Which of the wgmma forms of the skinny products takes a call (kernels/cuda/matmul.cu's
// SKINNY_WGMMA, SKINNY_STREAM_K and SKINNY_MULTICAST): whole tiles over a persistent grid or
// stream-K (cuda_gemm_skinny_wgmma.cuh), or whole tiles in clusters of two sharing A
// (cuda_gemm_skinny_multicast.cuh); AK_ERR_UNSUPPORTED sends the call to the other skinny forms.
#pragma once

#include <iterator>
#include <utility>

#include "autokernel/cuda_gemm_skinny_multicast.cuh"
#include "autokernel/cuda_gemm_skinny_wgmma.cuh"
#include "autokernel/skinny_plan.h"

namespace ak_gemm::skinny_wgmma {

// Whole tiles of `width` rows of W, one of skinny::kWgmmaWidths (else AK_ERR_UNSUPPORTED).
template <typename T, size_t... I>
int launch_whole_tiles(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k,
                       int width, std::index_sequence<I...>) {
  int rc = AK_ERR_UNSUPPORTED;
  (void)((width == skinny::kWgmmaWidths[I] &&
          (rc = launch<T, skinny::kWgmmaWidths[I]>(p, store, stream, split_k), true)) ||
         ...);
  return rc;
}

// How the form takes a call: width 32 to 128 (kWgmmaWidths) forces whole tiles of that width from
// 17 rows of A (split_k as launch's); stream_k 64 or 128 forces stream-K at that width (width then
// unused); multicast 1 runs whole tiles of 32 or 64 without a K split in clusters of two sharing A
// (cuda_gemm_skinny_multicast.cuh) wherever whole tiles of those take the call.
// Chosen (width 0) past 32 rows of A: whole tiles of the narrowest width up to `widest` that makes
// one wave, more than half of one (skinny_plan.h, one_wave_width; no K split). On the H200
// (docs/benchmarks.md, twenty-eighth to thirtieth sessions) whole tiles of 32 beat the other forms
// where they make one wave (64 x 4096 x 4096: 15.4 against 18.2 us, cuBLAS 14.4), as 64 did
// (64 x 8192 x 4096: 22.8 against 26.9, cuBLAS 21.8); on the H100 (thirty-fourth session) one wave
// of 96 or 112 beat stream-K over tiles of 64 (64 x 11008 x 4096: 37.2 against 40.2 us, cuBLAS
// 35.7; 64 x 14336 x 4096: 44.7 against 50.0, cuBLAS 45.3). With widest 64 (the earlier rule),
// stream_k 1 takes stream-K at 64 where those tiles make one to two waves, stream_k 0 whole tiles
// of 64 up to one and a half waves (with widest 128, every such N makes one wave of 128 or
// narrower); elsewhere AK_ERR_UNSUPPORTED (the caller's other paths; stream-K lost there:
// 64 x 32000 x 4096 77.8 against 72.4).
template <typename T>
int launch_skinny_wgmma(const GemmProblem<T, 1>& p, const StoreC<T>& store, cudaStream_t stream, int split_k,
                        int width, int stream_k, int multicast, int widest) {
  if (stream_k > 1)
    return stream_k == 128 ? launch_stream_k<T, 128>(p, store, stream)
                           : launch_stream_k<T, 64>(p, store, stream);
  if (width == 0) {
    if (p.m <= 32) return AK_ERR_UNSUPPORTED;
    const int64_t sms = device_attribute(cudaDevAttrMultiProcessorCount);
    const int64_t wide = (p.n + 63) / 64;
    width = skinny::one_wave_width(p.n, sms, widest);
    if (width == 0 && stream_k == 1 && wide > sms && wide <= 2 * sms)
      return launch_stream_k<T, 64>(p, store, stream);
    if (width == 0 && stream_k == 0 && 2 * wide > sms && 2 * wide <= 3 * sms) width = 64;
    if (width == 0) return AK_ERR_UNSUPPORTED;
    if (split_k == 0) split_k = 1;
  }
  if (multicast != 0 && (width == 32 || width == 64))
    return width == 32 ? launch_multicast<T, 32>(p, store, stream)
                       : launch_multicast<T, 64>(p, store, stream);
  return launch_whole_tiles(p, store, stream, split_k, width,
                            std::make_index_sequence<std::size(skinny::kWgmmaWidths)>{});
}

}  // namespace ak_gemm::skinny_wgmma
