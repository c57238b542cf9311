// Human-readable output of experiment results.
#pragma once

#include <ostream>
#include <string>

#include "harness/experiment.h"

namespace ak::cli {

// "PASS  95.3 us +-0.3% (n=120)  2817 GB/s  93.8% of roofline" or "FAIL at sweep: reason".
std::string summary_line(const ExperimentResult& r);
// The per-stage table followed by the summary line.
void print_result(std::ostream& out, const ExperimentResult& r);

}  // namespace ak::cli
