// The runtime's own device kernels (device_kernels.cu), behind plain C++ launch functions so the
// rest of the runtime compiles with the host compiler. Each returns the launch's status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace ak::cuda {

// Shared between the host and the gate kernel through mapped host memory. The host raises
// `released` to a hold's generation to open that hold (and every older one); the kernel writes
// its generation into `timed_out` when it gave up waiting.
struct GateFlags {
  uint32_t released;
  uint32_t timed_out;
};

// One thread that spins until flags->released reaches `generation` (wrap-around safe) or
// `timeout_ns` of GPU global time pass. `flags` is the device alias of the mapped memory.
cudaError_t launch_gate(cudaStream_t stream, GateFlags* flags, uint32_t generation, uint64_t timeout_ns);

// Reads all of `buffer` (bytes a multiple of 16) so the last-level cache holds only clean lines
// of it. `sink` (4 bytes of device memory) keeps the reads from being optimized away.
cudaError_t launch_cache_flush(cudaStream_t stream, const void* buffer, size_t bytes, uint32_t* sink,
                               int multiprocessors);

// Fills `bytes` (a multiple of 4) with non-zero pseudo-random 32-bit words drawn from `seed`.
cudaError_t launch_fill_words(cudaStream_t stream, void* data, size_t bytes, uint64_t seed,
                              int multiprocessors);

enum class HalfKind { F16, BF16 };
// Fills `count` 16-bit floats with uniform values in [-1, 1) drawn from `seed`.
cudaError_t launch_fill_uniform(cudaStream_t stream, void* data, size_t count, HalfKind kind, uint64_t seed,
                                int multiprocessors);

// dst[i] <- src[drawn_position(key, i, source_count, run)] for i < count (core/mix.h), elements of
// `element_bytes` (1, 2, 4 or 8) bytes.
cudaError_t launch_draw_elements(cudaStream_t stream, void* dst, const void* src, size_t element_bytes,
                                 size_t count, size_t source_count, uint64_t key, int multiprocessors);

// One span a gather reads: `length` (at most 16) bytes at `address`, to `out_offset` of the output.
struct GatherSpan {
  const unsigned char* address;
  uint32_t length;
  uint32_t out_offset;
};
// Reads every span into `out` (device memory).
cudaError_t launch_gather(cudaStream_t stream, const GatherSpan* spans, size_t count, unsigned char* out,
                          int multiprocessors);

// Loads the kernels above now. With lazy module loading (the default since CUDA 12.2) a kernel's
// first launch loads its module, and loading waits for running kernels: a first launch behind a
// held gate would wait for the gate, which waits for the host -- a deadlock until the timeout.
cudaError_t preload_device_kernels();
// The same for any kernels of this process (cudaFuncGetAttributes loads one lazy loading has not).
cudaError_t preload_kernels(std::initializer_list<const void*> kernels);
// Has the driver compile a kernel of PTX once, so that its compiler library is open before the
// sandbox: a module of PTX alone (--arch compute_80) is compiled at its first launch, and the
// driver opens that library then, which the sandbox's run phase forbids.
cudaError_t warm_ptx_compiler();

}  // namespace ak::cuda
