#pragma once

#include "runtime/runtime.h"

namespace ak {

// Copy bandwidth with all hardware threads (bytes read + written), and the sgemm rate of
// OpenBLAS when this build has it (matrix_tflops stays 0 and matrix_how says why otherwise).
Ceilings measure_host_ceilings();

}  // namespace ak
