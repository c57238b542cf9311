// Human-readable output: experiment results, and the number formats and tables the commands share.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/experiment.h"

namespace ak::cli {

// "PASS  95.3 us +-0.3% (n=120)  2817 GB/s  93.8% of roofline" or "FAIL at sweep: reason".
std::string summary_line(const ExperimentResult& r);
// The per-stage table followed by the summary line.
void print_result(std::ostream& out, const ExperimentResult& r);

// `value` with `precision` decimals and a suffix: fixed(1.234, 2, "x") is "1.23x".
std::string fixed(double value, int precision, std::string_view suffix = "");
// `value` in scientific notation: scientific(3.1e-6) is "3.10e-06".
std::string scientific(double value, int precision = 2);
// Microseconds with as many decimals as they deserve; "-" for none.
std::string microseconds(double us);
// "42s", "3m 05s", "1h 02m".
std::string duration(double seconds);
// Columns padded to their widest cell (in characters on screen, so "µ" counts once); the
// columns whose `right` is true are aligned to the right.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                 const std::vector<bool>& right);

}  // namespace ak::cli
