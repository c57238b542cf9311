// AK_HOST_DEVICE: a function compiled for the host and, under nvcc, for CUDA devices as well, so
// that one piece of arithmetic serves a kernel and the host code (and the CPU tests) that check it.
#pragma once

#if defined(__CUDACC__)
#define AK_HOST_DEVICE __host__ __device__
#else
#define AK_HOST_DEVICE
#endif
