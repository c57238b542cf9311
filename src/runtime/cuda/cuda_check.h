// Turns CUDA runtime and cuBLAS status codes into ak::Error. A device fault that poisons the
// context (illegal address, failed assert, ...) is ErrorKind::Crash: the process cannot use the
// GPU again and the experiment must be recorded as a crash. Anything else is ErrorKind::Launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace ak::cuda {

// True for the errors after which every later call in the context fails ("sticky" faults).
bool is_sticky_fault(cudaError_t status);

// "cudaMalloc(&p, n) at cuda_runtime.cpp:42: out of memory (cudaErrorMemoryAllocation)"
std::string describe(cudaError_t status, const char* call, const char* file, int line);

// Throws Error(Crash or Launch) when status is not cudaSuccess.
void check(cudaError_t status, const char* call, const char* file, int line);
void check(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace ak::cuda

// Wraps a CUDA runtime or cuBLAS call; the message carries the call's text and file:line.
#define AK_CUDA_CHECK(call) ::ak::cuda::check((call), #call, __FILE__, __LINE__)
