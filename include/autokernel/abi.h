/* autokernel kernel ABI (contract).
 *
 * Every compiled kernel module, whatever its backend, exports exactly one entry point:
 *
 *     int ak_launch(const ak_call* call);
 *
 * It enqueues all of its work on call->stream (a cudaStream_t for CUDA modules, NULL for host
 * modules) and returns 0, or a non-zero code when it cannot run the call (unsupported dtype,
 * a failed launch). The operator's spec (src/ops/<op>.cpp, docs/architecture.md) fixes the
 * order of inputs, outputs and scalars. Plain C so that C++, CUDA and ctypes all read it. */
#ifndef AUTOKERNEL_ABI_H
#define AUTOKERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AK_ABI_VERSION 2
#define AK_MAX_DIMS 4
#define AK_MAX_INPUTS 8
#define AK_MAX_OUTPUTS 4
#define AK_MAX_SCALARS 8

typedef enum ak_dtype { AK_F32 = 0, AK_F16 = 1, AK_BF16 = 2, AK_I32 = 3, AK_I64 = 4 } ak_dtype;

/* A strided view. Strides are in elements, not bytes; a contiguous row-major tensor of shape
 * (a, b) has strides (b, 1). */
typedef struct ak_tensor {
  void* data;
  int32_t dtype; /* ak_dtype */
  int32_t ndim;
  int64_t shape[AK_MAX_DIMS];
  int64_t strides[AK_MAX_DIMS];
} ak_tensor;

typedef struct ak_call {
  int32_t abi_version; /* AK_ABI_VERSION */
  int32_t n_inputs;
  int32_t n_outputs;
  int32_t n_scalars;
  ak_tensor inputs[AK_MAX_INPUTS];
  ak_tensor outputs[AK_MAX_OUTPUTS];
  double scalars[AK_MAX_SCALARS];
  void* stream; /* cudaStream_t on CUDA, NULL on the host backend */
  /* Scratch memory on the call's device, when the operator's spec gives its kernels some (its
   * signature's workspace, e.g. fused_mlp's intermediate [M, F]); NULL and 0 otherwise. At least
   * workspace_bytes long, 256-byte aligned, its contents undefined: every caller provides it fresh
   * for the call (the judge fills it with garbage first), so nothing in it outlives the call's
   * stream-ordered work. The caller allocates it, so a call enqueues no allocation of its own:
   * under CUDA graph capture an allocation would become graph nodes that every replay pays for. */
  void* workspace;
  int64_t workspace_bytes;
} ak_call;

/* Return codes a kernel may use; anything non-zero fails the experiment with this reason. */
#define AK_OK 0
#define AK_ERR_UNSUPPORTED 1 /* dtype, layout or shape this kernel does not handle */
#define AK_ERR_LAUNCH 2      /* the launch itself failed */

typedef int (*ak_launch_fn)(const ak_call* call);

/* Optional: `int ak_prepare(void)`, called once after the module is loaded and before its first
 * ak_launch, with the CUDA context current and no stream held. For work a launch must not do
 * while the harness holds the stream shut, such as loading device code through the driver API
 * (a module load waits for the device's running work). Returns AK_OK or a non-zero code. */
typedef int (*ak_prepare_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* AUTOKERNEL_ABI_H */
