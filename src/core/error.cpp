#include "core/error.h"

namespace ak {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Io: return "io";
    case ErrorKind::Compile: return "compile";
    case ErrorKind::Launch: return "launch";
    case ErrorKind::Validation: return "validation";
    case ErrorKind::Timeout: return "timeout";
    case ErrorKind::Crash: return "crash";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Internal: return "internal";
  }
  return "unknown";
}

int exit_code_for(ErrorKind kind) {
  return kind == ErrorKind::Usage ? 2 : 1;
}

}  // namespace ak
