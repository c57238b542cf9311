#include "cli/print.h"

#include <iomanip>
#include <sstream>

namespace ak::cli {

std::string summary_line(const ExperimentResult& r) {
  std::ostringstream out;
  out << std::fixed;
  if (!r.passed()) {
    out << to_string(r.status) << " at " << r.stage << ": " << r.reason;
    return out.str();
  }
  out << "PASS  " << std::setprecision(2) << r.timing.median_us << " us  +-" << std::setprecision(2)
      << r.timing.noise * 100 << "% (n=" << r.timing.samples << ")  " << std::setprecision(0) << r.gbps
      << " GB/s  " << std::setprecision(2) << r.tflops << " TFLOP/s";
  if (r.roofline > 0) out << "  " << std::setprecision(1) << r.roofline * 100 << "% of roofline";
  return out.str();
}

void print_result(std::ostream& out, const ExperimentResult& r) {
  out << std::left << std::setw(13) << "stage" << std::setw(8) << "checks" << std::setw(16) << "worst err/tol"
      << "seconds\n";
  for (const auto& s : r.stages) {
    std::ostringstream err, secs;
    err << std::setprecision(3) << s.worst_norm_error;
    secs << std::fixed << std::setprecision(2) << s.seconds;
    out << std::setw(13) << s.stage << std::setw(8) << s.checks << std::setw(16) << err.str() << secs.str()
        << (s.passed ? "" : "  FAILED") << "\n";
  }
  out << summary_line(r) << "\n";
}

}  // namespace ak::cli
