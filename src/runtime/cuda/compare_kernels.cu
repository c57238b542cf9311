// The judge's comparison kernels: an output against its float reference (written, finite, within
// tolerance, and the sums of the norm test), and the first differing byte of two buffers.
// One grid of compare_blocks() blocks of kThreads threads, grid-stride loops, a fixed-shape tree
// in shared memory per block, one partial per block: deterministic for a given device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "runtime/cuda/compare_kernels.h"
#include "runtime/cuda/device_kernels.h"

namespace ak::cuda {
namespace {

constexpr int kThreads = 256;

// The element's bits (up to 8 bytes) and whether every byte is the poison.
__device__ unsigned long long element_bits(const unsigned char* base, unsigned size, long long i) {
  const unsigned char* p = base + i * size;
  switch (size) {
    case 2: return *reinterpret_cast<const unsigned short*>(p);
    case 4: return *reinterpret_cast<const unsigned*>(p);
    case 8: return *reinterpret_cast<const unsigned long long*>(p);
    default: return *p;
  }
}

__device__ double bits_to_double(unsigned long long bits, DType dtype) {
  switch (dtype) {
    case DType::F32: return __uint_as_float(static_cast<unsigned>(bits));
    case DType::F16: return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    case DType::BF16: return __uint_as_float(static_cast<unsigned>(bits) << 16);
    case DType::I32: return static_cast<int>(static_cast<unsigned>(bits));
    default: return static_cast<double>(static_cast<long long>(bits));
  }
}

// Reduces every thread's part into thread 0's, in a fixed tree.
__device__ void reduce_block(OutputScan& mine) {
  __shared__ OutputScan parts[kThreads];
  parts[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) merge_scan(parts[threadIdx.x], parts[threadIdx.x + half]);
    __syncthreads();
  }
  mine = parts[0];
}

__global__ void scan_output_kernel(OutputScanJob a, unsigned element_bytes, OutputScan* out) {
  OutputScan mine;
  const auto* base = static_cast<const unsigned char*>(a.output);
  unsigned long long poison_bits = 0;
  for (unsigned b = 0; b < element_bytes; ++b)
    poison_bits = poison_bits << 8 | static_cast<unsigned char>(a.poison);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // A thread's indices increase, so its first find of each kind is its lowest.
  for (int64_t i = first; i < a.numel; i += stride) {
    const unsigned long long bits = element_bits(base, element_bytes, i);
    if (bits == poison_bits) {
      if (!mine.unwritten++) mine.first_unwritten = i;
    } else if (mine.first_nonfinite < 0 && !isfinite(bits_to_double(bits, a.dtype))) {
      mine.first_nonfinite = i;
    }
  }
  const int64_t compared = a.rows ? a.n_rows * a.row_len : a.numel;
  for (int64_t k = first; k < compared; k += stride) {
    const int64_t i = a.rows ? a.rows[k / a.row_len] * a.row_len + k % a.row_len : k;
    const double ref = a.reference[k];
    const double d = bits_to_double(element_bits(base, element_bytes, i), a.dtype) - ref;
    mine.ref_sq += ref * ref;
    mine.diff_sq += d * d;
    mine.max_abs = fmax(mine.max_abs, fabs(d));
    ++mine.compared;
    if (mine.first_violation < 0 && fabs(d) > a.atol + a.rtol * fabs(ref)) mine.first_violation = i;
  }
  reduce_block(mine);
  if (threadIdx.x == 0) out[blockIdx.x] = mine;
}

__device__ int64_t first_byte_differing(uint4 x, uint4 y) {
  const unsigned xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
  for (int w = 0; w < 4; ++w)
    if (const unsigned diff = xs[w] ^ ys[w]) return w * 4 + (__ffs(diff) - 1) / 8;  // little-endian
  return -1;
}

// 16 bytes at a time where both are 16-byte aligned, the rest (or all, when not) byte by byte.
__global__ void first_mismatch_kernel(const unsigned char* a, const unsigned char* b, unsigned char value,
                                      size_t bytes, bool vectors, int64_t* out) {
  __shared__ int64_t lows[kThreads];
  int64_t found = -1;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t words = vectors ? bytes / 16 : 0;
  const unsigned v = value * 0x01010101u;
  const uint4 pattern{v, v, v, v};
  for (size_t w = first; w < words && found < 0; w += stride) {
    const uint4 x = reinterpret_cast<const uint4*>(a)[w];
    const uint4 y = b ? reinterpret_cast<const uint4*>(b)[w] : pattern;
    if (const int64_t at = first_byte_differing(x, y); at >= 0) found = static_cast<int64_t>(w * 16) + at;
  }
  for (size_t i = words * 16 + first; i < bytes && found < 0; i += stride)
    if (a[i] != (b ? b[i] : value)) found = static_cast<int64_t>(i);
  lows[threadIdx.x] = found;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) lows[threadIdx.x] = lowest_index(lows[threadIdx.x], lows[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = lows[0];
}

}  // namespace

unsigned compare_blocks(int multiprocessors) {
  return static_cast<unsigned>(multiprocessors > 0 ? multiprocessors * 4 : 4);
}

cudaError_t launch_scan_output(cudaStream_t stream, const OutputScanJob& job, unsigned element_bytes,
                               OutputScan* parts, int multiprocessors) {
  scan_output_kernel<<<compare_blocks(multiprocessors), kThreads, 0, stream>>>(job, element_bytes, parts);
  return cudaGetLastError();
}

cudaError_t launch_first_mismatch(cudaStream_t stream, const void* a, const void* b, unsigned char value,
                                  size_t bytes, int64_t* parts, int multiprocessors) {
  const bool vectors = reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
  first_mismatch_kernel<<<compare_blocks(multiprocessors), kThreads, 0, stream>>>(
      static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), value, bytes, vectors,
      parts);
  return cudaGetLastError();
}

cudaError_t preload_compare_kernels() {
  return preload_kernels({reinterpret_cast<const void*>(&scan_output_kernel),
                          reinterpret_cast<const void*>(&first_mismatch_kernel)});
}

}  // namespace ak::cuda
