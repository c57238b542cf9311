#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/mix.h"
#include "runtime/cuda/device_kernels.h"

namespace ak::cuda {
namespace {

constexpr int kThreads = 256;
// A backstop for the gate if the global timer ever stood still: about 30 s at 2 GHz.
constexpr long long kGateClockBackstop = 64'000'000'000LL;

__device__ uint64_t global_time_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gate_kernel(GateFlags* flags, uint32_t generation, uint64_t timeout_ns) {
  const volatile uint32_t* released = &flags->released;
  const uint64_t start_ns = global_time_ns();
  const long long start_clock = clock64();
  while (static_cast<int32_t>(*released - generation) < 0) {
    if (global_time_ns() - start_ns > timeout_ns || clock64() - start_clock > kGateClockBackstop) {
      *reinterpret_cast<volatile uint32_t*>(&flags->timed_out) = generation;
      __threadfence_system();
      return;
    }
    __nanosleep(1000);
  }
}

__global__ void cache_flush_kernel(const uint4* buffer, size_t count, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const uint4 v = buffer[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  // Practically never true, but the compiler cannot know, so every load stays.
  if (acc == 0x9e3779b9u) *sink = acc;
}

__global__ void fill_words_kernel(uint32_t* data, size_t count, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] = static_cast<uint32_t>(mix64(seed + i)) | 1u;
}

template <typename T>
__global__ void fill_uniform_kernel(T* data, size_t count, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float unit = static_cast<float>(mix64(seed + i) >> 40) * (1.0f / 16777216.0f);
    data[i] = static_cast<T>(2.0f * unit - 1.0f);
  }
}

// dst[i] <- src[drawn_position(key, i, ...)], one element per thread: a run of `run` elements
// is one aligned piece of the source, so neighbouring threads read neighbouring bytes.
template <typename T>
__global__ void draw_elements_kernel(T* dst, const T* src, size_t count, size_t source_count, uint64_t run,
                                     uint64_t key) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    dst[i] = src[drawn_position(key, i, source_count, run)];
}

__global__ void gather_kernel(const GatherSpan* spans, size_t count, unsigned char* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const GatherSpan s = spans[i];
    // volatile: each read must reach memory that another process's kernel is writing.
    const volatile unsigned char* in = s.address;
    for (uint32_t b = 0; b < s.length; ++b) out[s.out_offset + b] = in[b];
  }
}

// Enough blocks to fill the device once, fewer when there is little work.
unsigned grid_for(size_t count, int multiprocessors) {
  const size_t wanted = (count + kThreads - 1) / kThreads;
  const size_t one_wave = static_cast<size_t>(std::max(multiprocessors, 1)) * (2048 / kThreads);
  return static_cast<unsigned>(std::max<size_t>(1, std::min(wanted, one_wave)));
}

}  // namespace

cudaError_t launch_gate(cudaStream_t stream, GateFlags* flags, uint32_t generation, uint64_t timeout_ns) {
  gate_kernel<<<1, 1, 0, stream>>>(flags, generation, timeout_ns);
  return cudaGetLastError();
}

cudaError_t launch_cache_flush(cudaStream_t stream, const void* buffer, size_t bytes, uint32_t* sink,
                               int multiprocessors) {
  const size_t count = bytes / sizeof(uint4);
  if (count == 0) return cudaSuccess;
  cache_flush_kernel<<<grid_for(count, multiprocessors), kThreads, 0, stream>>>(
      static_cast<const uint4*>(buffer), count, sink);
  return cudaGetLastError();
}

cudaError_t launch_fill_words(cudaStream_t stream, void* data, size_t bytes, uint64_t seed,
                              int multiprocessors) {
  const size_t count = bytes / sizeof(uint32_t);
  if (count == 0) return cudaSuccess;
  fill_words_kernel<<<grid_for(count, multiprocessors), kThreads, 0, stream>>>(static_cast<uint32_t*>(data),
                                                                               count, seed);
  return cudaGetLastError();
}

cudaError_t launch_fill_uniform(cudaStream_t stream, void* data, size_t count, HalfKind kind, uint64_t seed,
                                int multiprocessors) {
  if (count == 0) return cudaSuccess;
  const unsigned grid = grid_for(count, multiprocessors);
  if (kind == HalfKind::F16)
    fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(data), count, seed);
  else
    fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed);
  return cudaGetLastError();
}

template <typename T>
void draw_typed(cudaStream_t stream, void* dst, const void* src, size_t count, size_t source_count,
                uint64_t key, int multiprocessors) {
  draw_elements_kernel<<<grid_for(count, multiprocessors), kThreads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(src), count, source_count,
      draw_run_elements(sizeof(T), source_count), key);
}

cudaError_t launch_draw_elements(cudaStream_t stream, void* dst, const void* src, size_t element_bytes,
                                 size_t count, size_t source_count, uint64_t key, int multiprocessors) {
  if (count == 0) return cudaSuccess;
  if (source_count == 0) return cudaErrorInvalidValue;
  switch (element_bytes) {
    case 1: draw_typed<uint8_t>(stream, dst, src, count, source_count, key, multiprocessors); break;
    case 2: draw_typed<uint16_t>(stream, dst, src, count, source_count, key, multiprocessors); break;
    case 4: draw_typed<uint32_t>(stream, dst, src, count, source_count, key, multiprocessors); break;
    case 8: draw_typed<uint64_t>(stream, dst, src, count, source_count, key, multiprocessors); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_gather(cudaStream_t stream, const GatherSpan* spans, size_t count, unsigned char* out,
                          int multiprocessors) {
  if (count == 0) return cudaSuccess;
  gather_kernel<<<grid_for(count, multiprocessors), kThreads, 0, stream>>>(spans, count, out);
  return cudaGetLastError();
}

cudaError_t preload_kernels(std::initializer_list<const void*> kernels) {
  // cudaFuncGetAttributes loads a kernel that lazy loading has not loaded yet.
  for (const void* kernel : kernels) {
    cudaFuncAttributes attributes;
    if (const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel); status != cudaSuccess)
      return status;
  }
  return cudaSuccess;
}

cudaError_t preload_device_kernels() {
  return preload_kernels({reinterpret_cast<const void*>(&gate_kernel),
                          reinterpret_cast<const void*>(&cache_flush_kernel),
                          reinterpret_cast<const void*>(&fill_words_kernel),
                          reinterpret_cast<const void*>(&fill_uniform_kernel<__half>),
                          reinterpret_cast<const void*>(&fill_uniform_kernel<__nv_bfloat16>),
                          reinterpret_cast<const void*>(&draw_elements_kernel<uint8_t>),
                          reinterpret_cast<const void*>(&draw_elements_kernel<uint16_t>),
                          reinterpret_cast<const void*>(&draw_elements_kernel<uint32_t>),
                          reinterpret_cast<const void*>(&draw_elements_kernel<uint64_t>),
                          reinterpret_cast<const void*>(&gather_kernel)});
}

cudaError_t warm_ptx_compiler() {
  // PTX ISA 7.0 (CUDA 11.0), for the oldest target the starters build for: every driver since
  // compiles it for its GPU.
  static const char kProbe[] =
      ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry ak_ptx_probe()\n{\n\tret;\n}\n";
  cudaLibrary_t library = nullptr;
  if (const cudaError_t status =
          cudaLibraryLoadData(&library, kProbe, nullptr, nullptr, 0, nullptr, nullptr, 0);
      status != cudaSuccess)
    return status;
  cudaKernel_t kernel = nullptr;
  cudaError_t status = cudaLibraryGetKernel(&kernel, library, "ak_ptx_probe");
  cudaFuncAttributes attributes;
  if (status == cudaSuccess)
    status = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel));
  const cudaError_t unloaded = cudaLibraryUnload(library);
  return status != cudaSuccess ? status : unloaded;
}

}  // namespace ak::cuda
