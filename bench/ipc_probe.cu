// Does memory imported through CUDA IPC stream as fast as the importer's own? The judge shares
// one large allocation with the launcher by CUDA IPC, and a memory-bound kernel read 40% slower
// there (cross_entropy, 8 slots of 512 MB) than on buffers of its own process. This probe times
// one streaming read per buffer, R buffers of S bytes back to back (L2 flushed before), from:
//   native  R cudaMallocs of this process        big  one cudaMalloc of R*S, carved in R
//   ipc     one allocation of R*S made by the parent process and imported here
//     nvcc -O2 -o /tmp/ipc_probe bench/ipc_probe.cu && /tmp/ipc_probe 512 8
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(call)                                                   \
  do {                                                                \
    cudaError_t e = (call);                                           \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

__global__ void stream_read(const uint4* p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

double per_buffer_us(const std::vector<char*>& buffers, size_t bytes, unsigned* sink, const uint4* flush,
                     size_t flush_n) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> times;
  for (int rep = 0; rep < 12; ++rep) {
    stream_read<<<132 * 8, 256>>>(flush, flush_n, sink);
    CHECK(cudaEventRecord(a));
    for (char* p : buffers)
      stream_read<<<132 * 8, 256>>>(reinterpret_cast<const uint4*>(p), bytes / 16, sink);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep >= 2) times.push_back(1000.0 * ms / buffers.size());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int main(int argc, char** argv) {
  const size_t mb = argc > 1 ? std::stoul(argv[1]) : 512, slots = argc > 2 ? std::stoul(argv[2]) : 8;
  const size_t bytes = mb << 20;
  if (argc > 3 && std::string(argv[3]) == "child") {
    cudaIpcMemHandle_t handle;
    for (size_t i = 0; i < sizeof handle; ++i)
      reinterpret_cast<unsigned char*>(&handle)[i] = std::stoul(std::string(argv[4] + 2 * i, 2), nullptr, 16);
    char* imported = nullptr;
    CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&imported), handle, cudaIpcMemLazyEnablePeerAccess));
    unsigned* sink;
    uint4* flush;
    const size_t flush_bytes = size_t(100) << 20;
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMalloc(&flush, flush_bytes));
    std::vector<char*> ipc, native, big;
    char* one = nullptr;
    CHECK(cudaMalloc(&one, bytes * slots));
    for (size_t s = 0; s < slots; ++s) {
      char* p;
      CHECK(cudaMalloc(&p, bytes));
      native.push_back(p);
      big.push_back(one + s * bytes);
      ipc.push_back(imported + s * bytes);
    }
    for (auto* set : {&native, &big, &ipc})
      for (char* p : *set) CHECK(cudaMemset(p, 1, bytes));
    CHECK(cudaDeviceSynchronize());
    std::printf("%4zu MB x %zu  native %.1f us  big %.1f us  ipc %.1f us\n", mb, slots,
                per_buffer_us(native, bytes, sink, flush, flush_bytes / 16),
                per_buffer_us(big, bytes, sink, flush, flush_bytes / 16),
                per_buffer_us(ipc, bytes, sink, flush, flush_bytes / 16));
    return 0;
  }
  char* shared = nullptr;
  CHECK(cudaMalloc(&shared, bytes * slots));
  cudaIpcMemHandle_t handle;
  CHECK(cudaIpcGetMemHandle(&handle, shared));
  std::string hex;
  for (size_t i = 0; i < sizeof handle; ++i) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", reinterpret_cast<unsigned char*>(&handle)[i]);
    hex += two;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    execl(argv[0], argv[0], std::to_string(mb).c_str(), std::to_string(slots).c_str(), "child", hex.c_str(),
          nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
