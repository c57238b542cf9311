// The one error type of autokernel: a kind that decides the exit code and the result status,
// and a message that names the failing call or input.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ak {

enum class ErrorKind { Usage, Io, Compile, Launch, Validation, Timeout, Crash, Unsupported, Internal };

std::string_view to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// Exit codes picked by main(): usage errors 2, everything else 1.
int exit_code_for(ErrorKind kind);

}  // namespace ak
