// The launcher's side of the host backend: the judge's arena mapped from its inherited memfd,
// launches that run to completion, and the OpenMP thread pool started before the sandbox (the
// kernel modules are built with -fopenmp and share this process's libgomp and its threads; the
// sandbox forbids creating threads).
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"
#include "runtime/host/host_runtime.h"

namespace ak {
namespace {

class HostLaunchDevice final : public LaunchDevice {
 public:
  ~HostLaunchDevice() override {
    if (mapped_) ::munmap(mapped_, bytes_);
  }

  std::byte* attach(const std::string& handle, size_t bytes) override {
    int fd = -1;
    try {
      fd = std::stoi(handle);
    } catch (const std::exception&) {
      throw Error(ErrorKind::Usage, "host arena handle '" + handle + "' is not a descriptor number");
    }
    void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED)
      throw Error(ErrorKind::Io, std::string("mmap of the judge's arena: ") + std::strerror(errno));
    ::close(fd);  // the mapping keeps it; no descriptor of the judge's stays open here
    mapped_ = mapped;
    bytes_ = bytes;
    return static_cast<std::byte*>(mapped);
  }

  void prepare_for_sandbox() override { start_openmp_threads(); }

  void* stream() override { return nullptr; }
  void synchronize() override {}
  bool asynchronous() const override { return false; }
  void hold_stream() override {}
  void release_stream() override {}
  void launch_nothing() override {}

 private:
  void* mapped_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace

void start_openmp_threads() {
#ifdef _OPENMP
  int threads = 0;
#pragma omp parallel reduction(+ : threads)
  threads += 1;
  if (threads < 1) throw Error(ErrorKind::Internal, "OpenMP started no thread");
#endif
}

std::unique_ptr<LaunchDevice> make_host_launch_device() {
  return std::make_unique<HostLaunchDevice>();
}

}  // namespace ak
