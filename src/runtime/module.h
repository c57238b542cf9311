// A loaded kernel module (dlopen RAII) and its ak_launch entry point.
#pragma once

#include <filesystem>

#include "autokernel/abi.h"

namespace ak {

class KernelModule {
 public:
  // Throws Error(Io) if the file cannot be loaded, Error(Validation) if it has no ak_launch.
  explicit KernelModule(const std::filesystem::path& path);
  ~KernelModule();
  KernelModule(const KernelModule&) = delete;
  KernelModule& operator=(const KernelModule&) = delete;

  ak_launch_fn launch() const { return launch_; }
  // The module's ak_prepare, or nullptr when it has none (abi.h).
  ak_prepare_fn prepare() const { return prepare_; }

 private:
  void* handle_ = nullptr;
  ak_launch_fn launch_ = nullptr;
  ak_prepare_fn prepare_ = nullptr;
};

}  // namespace ak
