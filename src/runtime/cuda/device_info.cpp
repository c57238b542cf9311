#include <cstdio>
#include <string>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::cuda {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
std::string format_uuid(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<unsigned char>(uuid.bytes[i])));
    text += hex;
  }
  return text;
}

namespace {

// 13000 -> "13.0"
std::string format_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace

std::string arch_name(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if (minor == 0 && (major == 9 || major == 10)) arch += 'a';
  return arch;
}

DeviceInfo query_device_info(int device) {
  cudaDeviceProp props{};
  AK_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  int driver_version = 0, runtime_version = 0;
  AK_CUDA_CHECK(cudaDriverGetVersion(&driver_version));
  AK_CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));

  DeviceInfo info;
  info.backend = Backend::Cuda;
  info.name = props.name;
  info.id = format_uuid(props.uuid);
  info.arch = arch_name(props.major, props.minor);
  info.multiprocessors = props.multiProcessorCount;
  info.memory_bytes = props.totalGlobalMem;
  info.l2_bytes = static_cast<size_t>(props.l2CacheSize);
  info.shared_memory_per_block = props.sharedMemPerBlockOptin;
  info.driver =
      "CUDA driver " + format_version(driver_version) + ", runtime " + format_version(runtime_version);
  return info;
}

}  // namespace ak::cuda
