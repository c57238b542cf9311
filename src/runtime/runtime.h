// The device interface the harness runs on. Two implementations: cuda/ (an NVIDIA GPU through
// the CUDA runtime) and host/ (the CPU, so CI exercises the whole engine). Every handle is RAII;
// failures throw ak::Error naming the failing call.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ak {

enum class Backend { Cuda, Host };
std::string_view to_string(Backend b);
Backend parse_backend(std::string_view text);  // "cuda" | "host"; throws Error(Usage)

struct DeviceInfo {
  Backend backend = Backend::Host;
  std::string name;         // "NVIDIA H100 80GB HBM3", or the CPU model
  std::string id;           // stable identity for the ceilings cache (GPU UUID, or CPU model)
  std::string arch;         // what kernels are built for: "sm_90a", or "native" on the host
  int multiprocessors = 0;  // SMs, or hardware threads on the host
  size_t memory_bytes = 0;
  size_t l2_bytes = 0;  // last-level cache the timing flush must defeat
  size_t shared_memory_per_block = 0;
  std::string driver;  // driver / runtime versions, or the compiler on the host
};

// The ceilings a roofline is drawn against, measured on this device by `autokernel device`:
// never a datasheet number.
struct Ceilings {
  double copy_gbps = 0;      // device-to-device copy, bytes read + written per second / 1e9
  double matrix_tflops = 0;  // dense matrix product on random data (0 when not measured)
  std::string matrix_how;    // "cuBLAS fp16 8192^3", "OpenBLAS sgemm 2048^3", ...
  std::string measured_at;   // ISO date-time
};

// A device allocation. The destructor frees it and never throws.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual const DeviceInfo& info() const = 0;
  virtual std::unique_ptr<Buffer> allocate(size_t bytes) = 0;

  // Synchronous copies. They run on a stream of their own, not ordered after the kernel stream,
  // so the harness can look at memory while the kernel stream is held.
  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  // Sets `bytes` bytes of device memory to `value`, on the copy stream, synchronously.
  virtual void fill(void* device_dst, std::byte value, size_t bytes) = 0;

  // The stream handed to kernels (call->stream); nullptr on the host.
  virtual void* stream() = 0;
  // Waits for everything on the kernel stream. Throws Error(Crash) on a device fault (illegal
  // address, ...) and Error(Launch) on other errors, naming the CUDA error.
  virtual void synchronize() = 0;

  // True when a launch only enqueues work (CUDA), false when it runs to completion (host).
  virtual bool asynchronous() const = 0;
  // Holds the kernel stream behind a gate: work enqueued on it cannot start until release.
  // (No-ops on the host.) Used to catch kernels that work outside call->stream.
  virtual void hold_stream() = 0;
  virtual void release_stream() = 0;

  // One timing sample, the nvbench way: flush the last-level cache, hold the stream, record a
  // start mark, enqueue (the kernel launch), record a stop mark, release, wait. Returns seconds
  // between the marks, so launch latency stays out of the number.
  virtual double time_sample(const std::function<void()>& enqueue) = 0;

  // Measures copy bandwidth and matrix rate on this device (seconds of work; cached by the caller).
  virtual Ceilings measure_ceilings() = 0;
};

// Creates the runtime of a backend. Throws Error(Unsupported) when there is no such device
// (e.g. "no CUDA GPU: cudaGetDeviceCount returned ...").
std::unique_ptr<Runtime> make_runtime(Backend backend);

// The backend a plain command uses: cuda when this build has it and a GPU answers, else host.
Backend default_backend();
// The backend of a model command's --device: "cuda", "cpu" (the host backend) or "auto"
// (default_backend()). Throws Error(Usage) for anything else.
Backend backend_of_device(std::string_view device);

// Whether this build includes the CUDA backend.
bool cuda_backend_built();

}  // namespace ak
