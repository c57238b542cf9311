// What the GEMM launchers ask of the device and how they launch on it, for cuda_gemm.cuh and the
// kernels built on it (matmul, fused_mlp, attention). C++17, header-only, no state beyond cached
// device attributes and module probes.
//   device_attribute   cudaDeviceGetAttribute for the current device, cached per device
//   hopper_code, cluster_code
//                      whether this module's code for this device has sm_90a's features (wgmma,
//                      TMA, setmaxnreg) or thread block clusters (module_probe_kernel)
//   allow_shared_memory
//                      a kernel's opt-in to more than 48 KB of dynamic shared memory
//   cluster_launch, clusters_that_fit, launch_cluster_grid
//                      launches in thread block clusters, how many fit, and a persistent grid
//                      of them
#pragma once

#include <algorithm>
#include <atomic>

#include "autokernel/cuda_kernel.cuh"

namespace ak_gemm {

// An attribute of the current device, read once per device and attribute.
inline int device_attribute(cudaDeviceAttr attr) {
  constexpr int kMaxDevices = 64, kMaxAttrs = 4;
  static int cache[kMaxDevices][kMaxAttrs];  // 0 = not read yet (every attribute here is > 0)
  static const cudaDeviceAttr kAttrs[kMaxAttrs] = {cudaDevAttrMultiProcessorCount,
                                                   cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                                   cudaDevAttrComputeCapabilityMajor, cudaDevAttrL2CacheSize};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  int slot = -1;
  for (int i = 0; i < kMaxAttrs; ++i)
    if (kAttrs[i] == attr) slot = i;
  if (device < 0 || device >= kMaxDevices || slot < 0) {
    int value = 0;
    return cudaDeviceGetAttribute(&value, attr, device) == cudaSuccess ? value : 0;
  }
  int& cached = cache[device][slot];
  if (cached == 0 && cudaDeviceGetAttribute(&cached, attr, device) != cudaSuccess) cached = 0;
  return cached;
}

// Kernels of the module's own whose static shared memory says what its device code for the
// current device was built with: Which = 0, sm_90a's features (wgmma, setmaxnreg); Which = 1, an
// sm_90 or later target (clusters). A build from an earlier target's PTX, compiled by the driver
// for this device on load, has neither. Never launched.
template <int Which>
__global__ void module_probe_kernel(int* sink) {
#if defined(__CUDA_ARCH__)
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr bool kMarked = true;
#else
  constexpr bool kMarked = Which == 1 && __CUDA_ARCH__ >= 900;
#endif
  if constexpr (kMarked) {
    __shared__ int marker[4];
    marker[threadIdx.x % 4] = static_cast<int>(threadIdx.x);
    __syncthreads();
    *sink = marker[(threadIdx.x + 1) % 4];
  }
#endif
}

// Whether module_probe_kernel<Which> has its marker (read once: one module, one build).
template <int Which>
bool module_marked() {
  static std::atomic<int> known{-1};
  if (known.load() < 0) {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, module_probe_kernel<Which>) != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: nothing ran
      return false;
    }
    known.store(attributes.sharedSizeBytes > 0 ? 1 : 0);
  }
  return known.load() == 1;
}

// Whether the Hopper kernels (wgmma, TMA, setmaxnreg: sm_90a's code) run here: a Hopper device,
// and a module built for it rather than from an earlier target's PTX, where they are traps
// (cuda_sm90.cuh's AK_SM90_CODE).
inline bool hopper_code() {
  return device_attribute(cudaDevAttrComputeCapabilityMajor) == 9 && module_marked<0>();
}

// Whether thread block clusters run here: Hopper and later, with the module's code built for one.
inline bool cluster_code() {
  return device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9 && module_marked<1>();
}

// Sets a kernel's dynamic shared-memory limit when it needs more than the default 48 KB;
// false when the device cannot give that much.
template <typename Kernel>
bool allow_shared_memory(Kernel kernel, int bytes) {
  if (bytes > device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)) return false;
  if (bytes <= 48 * 1024) return true;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess;
}

// A launch of `grid` blocks of `threads` (smem_bytes of dynamic shared memory each) in thread block
// clusters of `cluster` blocks, for cudaLaunchKernelEx; `attribute` holds the cluster's shape and
// must outlive the config.
inline cudaLaunchConfig_t cluster_launch(dim3 grid, int threads, int smem_bytes, dim3 cluster,
                                         cudaStream_t stream, cudaLaunchAttribute (&attribute)[1]) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  config.stream = stream;
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = cluster.x;
  attribute[0].val.clusterDim.y = cluster.y;
  attribute[0].val.clusterDim.z = cluster.z;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}

// How many clusters of `cluster` blocks of kKernel (threads and smem_bytes as it is launched) the
// device runs at once, 0 where it cannot say; read once per kernel and cluster size (for the first
// device asked: the clusters that fit are the same on GPUs of a kind).
template <auto kKernel>
int clusters_that_fit(int threads, int smem_bytes, dim3 cluster) {
  constexpr unsigned kPortable = 8;                   // blocks in a portable cluster
  static std::atomic<int> known[kPortable + 1] = {};  // by size: the count + 1, 0 until read
  const unsigned size = cluster.x * cluster.y * cluster.z;
  if (size < 1 || size > kPortable) return 0;
  std::atomic<int>& slot = known[size];
  if (slot.load() == 0) {
    int count = 0;
    if (allow_shared_memory(kKernel, smem_bytes)) {
      cudaLaunchAttribute attribute[1];
      const cudaLaunchConfig_t config =
          cluster_launch(cluster, threads, smem_bytes, cluster, nullptr, attribute);
      if (cudaOccupancyMaxActiveClusters(&count, kKernel, &config) != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: the call only asked
        count = 0;
      }
    }
    slot.store(count + 1);
  }
  return slot.load() - 1;
}

// kKernel(args...) on a persistent grid in clusters of `cluster` blocks along x: as many clusters
// as the device runs at once, at most `items` (each cluster walks its share of them).
// AK_ERR_UNSUPPORTED where no cluster fits, AK_ERR_LAUNCH where the launch fails.
template <auto kKernel, class... Args>
int launch_cluster_grid(int items, unsigned cluster, int threads, int smem_bytes, cudaStream_t stream,
                        const Args&... args) {
  const int fit = clusters_that_fit<kKernel>(threads, smem_bytes, dim3(cluster));
  if (fit <= 0) return AK_ERR_UNSUPPORTED;
  cudaLaunchAttribute attribute[1];
  const cudaLaunchConfig_t config =
      cluster_launch(dim3(cluster * static_cast<unsigned>(std::min(items, fit))), threads, smem_bytes,
                     dim3(cluster), stream, attribute);
  if (cudaLaunchKernelEx(&config, kKernel, args...) == cudaSuccess) return AK_OK;
  (void)cudaGetLastError();
  return AK_ERR_LAUNCH;
}

}  // namespace ak_gemm
