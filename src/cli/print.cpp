#include "cli/print.h"

#include <algorithm>
#include <cmath>
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

std::string fixed(double value, int precision, std::string_view suffix) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value << suffix;
  return out.str();
}

std::string scientific(double value, int precision) {
  std::ostringstream out;
  out << std::scientific << std::setprecision(precision) << value;
  return out.str();
}

std::string microseconds(double us) {
  if (us <= 0) return "-";
  return fixed(us, us >= 1000 ? 0 : us >= 10 ? 1 : 2);
}

std::string duration(double seconds) {
  const long s = std::lround(seconds);
  std::ostringstream out;
  if (s >= 3600)
    out << s / 3600 << "h " << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  else if (s >= 60)
    out << s / 60 << "m " << std::setw(2) << std::setfill('0') << s % 60 << "s";
  else
    out << s << "s";
  return out.str();
}

namespace {

// Characters on screen, not bytes: "µ" and "→" are two and three bytes of UTF-8.
size_t display_width(std::string_view text) {
  size_t width = 0;
  for (unsigned char ch : text) width += (ch & 0xC0) != 0x80;
  return width;
}

}  // namespace

void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& right) {
  std::vector<size_t> widths(right.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - display_width(row[c]), ' ');
      line += (c ? "  " : "") + (right[c] ? pad + row[c] : row[c] + pad);
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  }
}

}  // namespace ak::cli
