// The device interfaces the harness runs on: Runtime for the judge (the process whose word is
// the verdict; it never runs a kernel's code) and LaunchDevice for the launcher (the sandboxed
// process that does). Two implementations of each: cuda/ (an NVIDIA GPU through the CUDA
// runtime) and host/ (the CPU, so CI exercises the whole engine). Every handle is RAII; failures
// throw ak::Error naming the failing call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/output_scan.h"

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

// Device memory that the judge shares with the launcher: the process that loads a kernel module
// and runs its host code (harness/launcher.h). The judge owns it; the launcher maps it by handle.
class SharedArena {
 public:
  virtual ~SharedArena() = default;
  virtual std::byte* data() const = 0;  // the judge's address of the first byte
  virtual size_t size() const = 0;
  // What the launcher maps it by: a CUDA IPC handle in hex; or, for memory passed as a
  // descriptor the launcher inherits (inherited_fd()), a prefix to which the launcher's number of
  // that descriptor is appended ("" for the host's memfd, "vmm-fd:" for cuMemCreate memory).
  virtual std::string handle() const = 0;
  virtual int inherited_fd() const { return -1; }
};

// One span of device memory a Gather reads (at most 16 bytes: an element).
struct ByteSpan {
  const std::byte* address;
  uint32_t length;
};

// Reads a fixed set of spans back to the host in one device operation. Prepared ahead, so that
// reading costs the same each time (the judge reads inside its own clock).
class Gather {
 public:
  virtual ~Gather() = default;
  // The spans' bytes, concatenated in order.
  virtual const std::vector<std::byte>& read() = 0;
  // Other spans from now on, reusing this gather's memory where it is large enough.
  virtual void reset(const std::vector<ByteSpan>& spans) = 0;
};

// The judge's side of a device: memory it owns, shares with the launcher, fills, reads and
// compares. It never runs a kernel module (the launcher does, through LaunchDevice). Every
// operation is synchronous.
class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual const DeviceInfo& info() const = 0;
  // Memory only this process can reach.
  virtual std::unique_ptr<Buffer> allocate(size_t bytes) = 0;
  // Memory the launcher will map too.
  virtual std::unique_ptr<SharedArena> share(size_t bytes) = 0;

  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  // Sets `bytes` bytes of device memory to `value`.
  virtual void fill(void* device_dst, std::byte value, size_t bytes) = 0;
  // Device to device.
  virtual void copy(void* device_dst, const void* device_src, size_t bytes) = 0;
  // `count` elements of `element_bytes` (1, 2, 4 or 8) each, element i drawn from the
  // `source_count` elements at device_src: from drawn_position(key, i, ...) (core/mix.h), so
  // the host can rebuild any of them.
  virtual void draw_elements(void* device_dst, const void* device_src, size_t element_bytes, size_t count,
                             size_t source_count, uint64_t key) = 0;
  virtual std::unique_ptr<Gather> prepare_gather(const std::vector<ByteSpan>& spans) = 0;

  // Comparisons done where the data lives, so that only their summaries cross to the host (a
  // check of an 8192 x 8192 output reads 128 MB; its summary is a few hundred bytes). Results do
  // not depend on thread or block counts.
  virtual OutputScan scan_output(const OutputScanJob& job) = 0;
  // The first byte at which `a` and `b` differ, or -1 when all `bytes` are equal.
  virtual int64_t first_difference(const void* a, const void* b, size_t bytes) = 0;
  // The first byte that is not `value`, or -1 when every one of `bytes` is.
  virtual int64_t first_byte_not(const void* data, std::byte value, size_t bytes) = 0;
  // Evicts the last-level cache (a read of twice its size: a write would leave dirty lines whose
  // write-back lands in the next timed work), so the next timed work starts cold.
  virtual void flush_cache() = 0;

  // Measures copy bandwidth and matrix rate on this device (seconds of work; cached by the caller).
  virtual Ceilings measure_ceilings() = 0;
};

// The launcher's side of a device: the stream a kernel is given and the judge's shared arena
// mapped into this process. Failures throw ak::Error naming the failing call.
class LaunchDevice {
 public:
  virtual ~LaunchDevice() = default;

  // Maps the judge's arena (SharedArena::handle()) and returns this process's address of it.
  virtual std::byte* attach(const std::string& handle, size_t bytes) = 0;
  // Does now what the sandbox would forbid later: loading the runtime's own kernels, starting the
  // host's OpenMP thread pool that kernel modules share.
  virtual void prepare_for_sandbox() = 0;

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
  // Enqueues the smallest piece of the runtime's own device work: what an empty timed batch
  // runs so that its cost includes the device's switch between the launcher and the judge.
  virtual void launch_nothing() = 0;
  // The device time between mark_batch_start() and mark_batch_end(), read after synchronize():
  // the launcher's own account of a timed batch, printed beside the judge's clock to locate where
  // a batch's time goes. The kernel's process could forge it, so it never decides anything.
  // Negative where there is none (the host).
  virtual void mark_batch_start() {}
  virtual void mark_batch_end() {}
  virtual double batch_device_us() { return -1; }
};

// Creates the runtime of a backend. Throws Error(Unsupported) when there is no such device
// (e.g. "no CUDA GPU: cudaGetDeviceCount returned ...").
std::unique_ptr<Runtime> make_runtime(Backend backend);
// The launcher's device: `device` is the judge's CUDA device ordinal (ignored on the host).
std::unique_ptr<LaunchDevice> make_launch_device(Backend backend, int device);
// The CUDA device this process uses (0 on the host backend), for the launcher's --device.
int current_device(Backend backend);
// Where this process sees more than one CUDA GPU: the value of CUDA_VISIBLE_DEVICES that shows a
// child process device `device` of this process and no other, by its UUID ("GPU-..."; an ordinal
// would name the machine's GPU of that number, not this process's). "" where the child's inherited
// environment already shows one device (one GPU, a MIG instance: named as its parent names it) and
// on the host backend. AUTOKERNEL_SOLE_GPU_BY_UUID=1 names a lone GPU by UUID too, so that a
// one-GPU machine tests the path several GPUs take. A judge's launcher sees its GPU alone: a
// kernel that found another GPU could compute there, beside the judge's, where neither the clock's
// batches nor the checks of the judge's GPU between them (the refill, the flush) see it.
std::string sole_device_visibility(Backend backend, int device);
// How many devices of the backend this process sees (the host backend: one; CUDA: 0 when none
// answers), and the name of one by its ordinal. Neither creates a device context.
int visible_devices(Backend backend);
std::string device_model(Backend backend, int ordinal);

// The backend a plain command uses: cuda when this build has it and a GPU answers, else host.
Backend default_backend();
// The backend of a model command's --device: "cuda", "cpu" (the host backend) or "auto"
// (default_backend()). Throws Error(Usage) for anything else.
Backend backend_of_device(std::string_view device);

// Whether this build includes the CUDA backend.
bool cuda_backend_built();

}  // namespace ak
