// The CUDA backend of ak::Runtime (the judge's side) and ak::LaunchDevice (the launcher's): the
// current CUDA device (CUDA_VISIBLE_DEVICES picks it) through the CUDA runtime API.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "runtime/runtime.h"

namespace ak {

// True when the CUDA runtime answers and sees at least one GPU. Never throws.
bool cuda_device_present();
int cuda_current_device();
// Devices the CUDA runtime sees (0 when it does not answer), and one's name; never throws.
int cuda_device_count();
std::string cuda_device_name(int ordinal);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it and CUDA_VISIBLE_DEVICES
// takes it. Throws Error(Launch) carrying the failing call.
std::string cuda_device_uuid(int ordinal);

// Throws Error(Unsupported, "no CUDA GPU: cudaGetDeviceCount: <reason>") when there is none.
std::unique_ptr<Runtime> make_cuda_runtime();
std::unique_ptr<LaunchDevice> make_cuda_launch_device(int device);

namespace cuda {

// What the device is, from cudaGetDeviceProperties and the driver/runtime versions.
DeviceInfo query_device_info(int device);
std::string format_uuid(const cudaUUID_t& uuid);

// "sm_90a" for compute capability 9.0 and "sm_100a" for 10.0 (their arch-specific features,
// wgmma and tcgen05, need the "a" target), "sm_<major><minor>" otherwise.
std::string arch_name(int major, int minor);

// Copy bandwidth (cudaMemcpyAsync device to device) and the best of cuBLAS fp16/bf16 matrix
// rates, on random data, on `stream`. About a second of GPU work.
Ceilings measure_ceilings(cudaStream_t stream, const DeviceInfo& info);

// An IPC handle as text for a command line, and back (throws Error(Usage) on malformed text).
std::string to_hex(const void* bytes, size_t size);
void from_hex(const std::string& hex, void* bytes, size_t size);

}  // namespace cuda
}  // namespace ak
