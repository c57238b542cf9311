#include "runtime/module.h"

#include <dlfcn.h>

#include "core/error.h"

namespace ak {

KernelModule::KernelModule(const std::filesystem::path& path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    throw Error(ErrorKind::Io, "cannot load kernel module " + path.string() + ": " + (why ? why : "unknown"));
  }
  launch_ = reinterpret_cast<ak_launch_fn>(::dlsym(handle_, "ak_launch"));
  if (!launch_) {
    ::dlclose(handle_);
    handle_ = nullptr;
    throw Error(ErrorKind::Validation, "kernel module " + path.filename().string() +
                                           " does not export ak_launch (declare it extern \"C\")");
  }
  prepare_ = reinterpret_cast<ak_prepare_fn>(::dlsym(handle_, "ak_prepare"));
}

KernelModule::~KernelModule() {
  if (handle_) ::dlclose(handle_);
}

}  // namespace ak
