#include "harness/result.h"

namespace ak {

// The names live once, in the JSON mapping of result.h.
std::string to_string(Status s) {
  return nlohmann::json(s).get<std::string>();
}

}  // namespace ak
