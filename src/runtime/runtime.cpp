#include "runtime/runtime.h"

#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "runtime/host/host_runtime.h"
#ifdef AK_WITH_CUDA
#include "runtime/cuda/cuda_runtime.h"
#endif

namespace ak {

std::string_view to_string(Backend b) {
  return b == Backend::Cuda ? "cuda" : "host";
}

Backend parse_backend(std::string_view text) {
  if (text == "cuda") return Backend::Cuda;
  if (text == "host" || text == "cpu") return Backend::Host;
  throw Error(ErrorKind::Usage, "unknown backend '" + std::string(text) + "' (expected cuda or host)");
}

bool cuda_backend_built() {
#ifdef AK_WITH_CUDA
  return true;
#else
  return false;
#endif
}

Backend backend_of_device(std::string_view device) {
  if (device == "auto") return default_backend();
  if (device == "cuda") return Backend::Cuda;
  if (device == "cpu") return Backend::Host;
  throw Error(ErrorKind::Usage, "unknown device '" + std::string(device) + "' (cuda, cpu or auto)");
}

Backend default_backend() {
#ifdef AK_WITH_CUDA
  if (cuda_device_present()) return Backend::Cuda;
#endif
  return Backend::Host;
}

std::unique_ptr<Runtime> make_runtime(Backend backend) {
  if (backend == Backend::Host) return make_host_runtime();
#ifdef AK_WITH_CUDA
  return make_cuda_runtime();
#else
  throw Error(ErrorKind::Unsupported,
              "this autokernel was built without the CUDA backend (no CUDA toolkit at build time)");
#endif
}

}  // namespace ak

namespace ak {

std::unique_ptr<LaunchDevice> make_launch_device(Backend backend, int device) {
  if (backend == Backend::Host) return make_host_launch_device();
#ifdef AK_WITH_CUDA
  return make_cuda_launch_device(device);
#else
  (void)device;
  throw Error(ErrorKind::Unsupported,
              "this autokernel was built without the CUDA backend (no CUDA toolkit at build time)");
#endif
}

int current_device(Backend backend) {
#ifdef AK_WITH_CUDA
  if (backend == Backend::Cuda) return cuda_current_device();
#endif
  (void)backend;
  return 0;
}

std::string sole_device_visibility(Backend backend, int device) {
#ifdef AK_WITH_CUDA
  if (backend == Backend::Cuda) {
    const char* forced = std::getenv("AUTOKERNEL_SOLE_GPU_BY_UUID");
    if (cuda_device_count() > 1 || (forced && std::string_view(forced) == "1"))
      return cuda_device_uuid(device);
  }
#endif
  (void)backend;
  (void)device;
  return "";
}

int visible_devices(Backend backend) {
#ifdef AK_WITH_CUDA
  if (backend == Backend::Cuda) return cuda_device_count();
#endif
  return backend == Backend::Host ? 1 : 0;
}

std::string device_model(Backend backend, int ordinal) {
#ifdef AK_WITH_CUDA
  if (backend == Backend::Cuda) return cuda_device_name(ordinal);
#endif
  (void)ordinal;
  return backend == Backend::Host ? host_cpu_model() : "";
}

}  // namespace ak
