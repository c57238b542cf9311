#include "cli/kernelbench_print.h"

#include "cli/print.h"

namespace ak::cli::kb {
namespace {

std::string percent(double fraction) {
  return fixed(100 * fraction, 1, "%");
}

const char* model_label(const std::string& model) {
  if (model == "solution") return "ModelNew";
  if (model == "eager") return "Model (eager)";
  return "Model (torch.compile)";
}

// "1.23x", or "-" when either time is missing.
std::string speedup_of(const nlohmann::json& record, const std::string& baseline) {
  const auto& speedup = record.value("speedup", nlohmann::json::object());
  return speedup.contains(baseline) ? fixed(speedup[baseline].get<double>(), 2, "x") : "-";
}

// A problem's operators: "matmul 4096x4096x4096 fp32, softmax 64x128 fp32".
std::string ops_of(const nlohmann::json& row) {
  std::string text;
  for (const auto& op : row.value("ops", nlohmann::json::array())) {
    if (!text.empty()) text += ", ";
    text += op["op"].get<std::string>() + " " + op["problem"].get<std::string>();
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::string status_line(const nlohmann::json& record) {
  const std::string status = record.value("status", std::string("?"));
  if (status == "PASS") return status;
  const std::string phase = record.value("phase", std::string());
  return status + (phase.empty() ? "" : " (" + phase + ")") + ": " + record.value("reason", std::string());
}

void print_record(std::ostream& out, const nlohmann::json& record) {
  const auto& device = record.value("device", nlohmann::json::object());
  out << "kernelbench " << record["problem"].value("key", std::string("?")) << "  "
      << record.value("solution", std::string()) << "\n"
      << "on " << device.value("name", std::string("?")) << ", "
      << record.value("precision", std::string("fp32")) << "\n\n"
      << "status       " << status_line(record) << "\n";
  const auto& c = record.value("correctness", nlohmann::json::object());
  if (c.contains("passed"))
    out << "correctness  " << c["passed"].get<int>() << "/" << c["trials"].get<int>()
        << " trials; max |diff| " << scientific(c.value("max_abs_diff", 0.0), 1) << ", relative error "
        << scientific(c.value("relative_error", 0.0), 1) << " (KernelBench atol=rtol "
        << c.value("kernelbench_tolerance", 0.0) << ", ours relative " << c.value("relative_tolerance", 0.0)
        << ")\n";
  for (const auto& note : c.value("notes", nlohmann::json::array()))
    out << "note         " << note.get<std::string>() << "\n";
  const auto& timing = record.value("timing", nlohmann::json::object());
  std::vector<std::vector<std::string>> rows = {
      {"model", "median µs", "noise", "batch", "rounds", "ModelNew speedup"}};
  for (const std::string model : {"solution", "eager", "compile"}) {
    if (!timing.contains(model)) continue;
    const auto& t = timing[model];
    if (t.contains("error")) {
      rows.push_back({model_label(model), "-", "-", "-", "-", t["error"].get<std::string>()});
      continue;
    }
    rows.push_back({model_label(model), microseconds(t["median_us"].get<double>()),
                    percent(t["noise"].get<double>()), std::to_string(t["batch"].get<int>()),
                    std::to_string(t["rounds"].get<int>()),
                    model == "solution" ? "" : speedup_of(record, model)});
  }
  if (rows.size() > 1) {
    out << "\n";
    print_table(out, rows, {false, true, true, true, true, true});
    out << "timing: " << timing.value("method", std::string()) << "\n";
  }
  if (record.contains("seconds")) {
    const auto& s = record["seconds"];
    out << "evaluation: " << fixed(s.value("without_build", 0.0), 1, " s") << " without the build ("
        << fixed(s.value("build", 0.0), 1, " s") << ")\n";
  }
}

void print_problems(std::ostream& out, const nlohmann::json& problems, const std::string& baseline) {
  std::vector<std::vector<std::string>> rows = {{"problem", "ours", "share", "status", "speedup"}};
  for (const auto& row : problems) {
    const bool has_record = row.contains("record");
    std::string status = row.contains("error")        ? "error: " + row["error"].get<std::string>()
                         : has_record                 ? status_line(row["record"])
                         : row.value("mapped", false) ? "mapped"
                         : row.contains("refused")    ? "not mapped: " + row["refused"][0].get<std::string>()
                                                      : "not mapped";
    if (status.size() > 90) status = status.substr(0, 87) + "...";
    rows.push_back({row.value("key", std::string("?")), ops_of(row),
                    row.contains("share") ? percent(row["share"].get<double>()) : "-", status,
                    has_record ? speedup_of(row["record"], baseline) : "-"});
  }
  print_table(out, rows, {false, false, true, false, true});
}

void print_scores(std::ostream& out, const std::vector<LevelScore>& levels, const std::string& baseline) {
  std::vector<std::vector<std::string>> rows = {
      {"level", "attempted", "correct", "fast_0", "fast_1", "fast_2", "geomean speedup (correct)"}};
  for (const auto& l : levels) {
    std::vector<std::string> row = {std::to_string(l.level), std::to_string(l.attempted),
                                    std::to_string(l.correct)};
    for (const auto& [p, value] : l.fast) row.push_back(fixed(value, 2));
    row.push_back(l.geomean_speedup > 0 ? fixed(l.geomean_speedup, 2, "x") : "-");
    rows.push_back(row);
  }
  print_table(out, rows, {false, true, true, true, true, true, true});
  out << "fast_p: the share of the attempted problems correct and more than p times faster than PyTorch "
      << (baseline == "compile" ? "under torch.compile" : "eager") << "\n";
}

}  // namespace ak::cli::kb
