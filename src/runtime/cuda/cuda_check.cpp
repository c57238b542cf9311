#include "runtime/cuda/cuda_check.h"

#include <cstring>

namespace ak::cuda {
namespace {

// Only the file's own name: full build paths make messages long without saying more.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + base_name(file) + ":" + std::to_string(line);
}

}  // namespace

bool is_sticky_fault(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorExternalDevice: return true;
    default: return false;
  }
}

std::string describe(cudaError_t status, const char* call, const char* file, int line) {
  return where(call, file, line) + ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")";
}

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  const ErrorKind kind = is_sticky_fault(status) ? ErrorKind::Crash : ErrorKind::Launch;
  throw Error(kind, describe(status, call, file, line));
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorKind::Launch, where(call, file, line) + ": " + cublasGetStatusString(status));
}

}  // namespace ak::cuda
