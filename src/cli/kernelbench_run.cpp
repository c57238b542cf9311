#include "cli/kernelbench_run.h"

#include <algorithm>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "cli/kernelbench_ours.h"
#include "cli/kernelbench_print.h"
#include "cli/kernelbench_score.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/sandbox.h"
#include "core/subprocess.h"
#include "profile/starter_fit.h"

namespace ak::cli::kb {
namespace {
namespace fs = std::filesystem;

// What an agent is told besides the problem: the interface and how the judge decides.
constexpr const char* kAgentRules = R"(Write a Python file at the path in $AK_KB_SOLUTION that defines
`class ModelNew(torch.nn.Module)`: the same constructor arguments and forward signature as the
problem's `Model`, the same outputs (shape, dtype, values), and faster. Write it with PyTorch,
Triton, or CUDA through torch.utils.cpp_extension.load_inline. Build the same parameters in the
same order as Model does: both are built after torch.manual_seed(42).

How it is judged, by a process your code cannot reach:
- Correctness: 5 calls on fresh random inputs; every output within torch.allclose(atol=rtol=1e-4
  for fp32) AND a relative L2 error within 1e-4; every output element must be written; the inputs
  must not change.
- Every call gets new inputs in the same buffers: a remembered result fails.
- All work on the current CUDA stream, finished when forward returns: no side streams, no threads.
- Replacing time or torch functions, or writing to file descriptors you did not open, is rejected.
- Timing: the judge's own wall clock over rounds of calls, cache flushed, median; the score is the
  speedup over the problem's Model in PyTorch eager.
)";

nlohmann::json problem_of(const nlohmann::json& row) {
  nlohmann::json p;
  for (const char* key : {"key", "level", "number", "name", "path"})
    if (row.contains(key)) p[key] = row[key];
  return p;
}

fs::path workspace_of(const LoopOptions& o, const nlohmann::json& row) {
  return fs::path(o.workspace) / ("level" + std::to_string(row.value("level", 0))) /
         fs::path(row["path"].get<std::string>()).stem();
}

// The judge's record, or one that says why there is none (the judge itself died or timed out).
// A problem the judge cannot take (not in KernelBench's format) is the row's error instead: it
// is not attempted.
nlohmann::json judged(const LoopOptions& o, nlohmann::json& row, const fs::path& solution) {
  try {
    return evaluate(o.dir, row["path"].get<std::string>(), solution, o.eval, o.progress);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Usage) {
      row["error"] = e.what();
      return nullptr;
    }
    return failed_record(problem_of(row), solution.string(),
                         e.kind() == ErrorKind::Timeout ? "TIMEOUT" : "CRASH",
                         std::string("the judge: ") + e.what());
  }
}

void announce(const LoopOptions& o, const nlohmann::json& row, const nlohmann::json& record) {
  if (o.progress)
    std::cerr << "autokernel: " << row.value("key", std::string("?")) << ": " << status_line(record)
              << std::endl;
}

std::string prompt_for(const nlohmann::json& row, const nlohmann::json& last) {
  std::string text = "# KernelBench problem " + row["key"].get<std::string>() + "\n\n```python\n" +
                     read_text_file(row["path"].get<std::string>()) + "```\n\n" + kAgentRules;
  if (!last.is_null())
    text += "\nYour previous attempt was judged " + status_line(last) + "\nIts record: $AK_KB_LAST_RECORD\n";
  return text;
}

}  // namespace

nlohmann::json map_problems(const LoopOptions& o) {
  std::vector<std::string> args = {"map",
                                   "--dir",
                                   o.dir,
                                   "--workspace",
                                   o.workspace,
                                   "--min-share",
                                   std::to_string(o.min_share),
                                   "--device",
                                   o.eval.device,
                                   "--precision",
                                   o.eval.precision,
                                   "--shrink",
                                   std::to_string(o.eval.shrink)};
  if (o.level > 0) args.insert(args.end(), {"--level", std::to_string(o.level)});
  if (!o.problems.empty()) args.insert(args.end(), {"--problems", o.problems});
  nlohmann::json document = run_python(args, std::chrono::seconds(o.map_timeout_s), o.progress);
  const Backend backend =
      document["device"].value("type", std::string()) == "cuda" ? Backend::Cuda : Backend::Host;
  for (auto& row : document["problems"]) drop_refused_ops(row, backend, o.min_share);
  write_json(fs::path(o.workspace) / "map.json", document);
  return document;
}

nlohmann::json list_problems(const LoopOptions& o) {
  std::vector<std::string> args = {"list", "--dir", o.dir, "--shrink", std::to_string(o.eval.shrink)};
  if (o.level > 0) args.insert(args.end(), {"--level", std::to_string(o.level)});
  if (!o.problems.empty()) args.insert(args.end(), {"--problems", o.problems});
  return run_python(args, std::chrono::seconds(600), false)["problems"];
}

nlohmann::json discover_problems(const LoopOptions& o) {
  fs::path root = o.dir;
  const std::regex level_dir(R"(level(\d+))"), problem_file(R"((\d+)_(.+)\.py)");
  const auto has_levels = [&](const fs::path& p) {
    if (!fs::is_directory(p)) return false;
    for (const auto& entry : fs::directory_iterator(p))
      if (entry.is_directory() && std::regex_match(entry.path().filename().string(), level_dir)) return true;
    return false;
  };
  if (!has_levels(root)) root /= "KernelBench";  // a checkout of the repository
  if (!has_levels(root))
    throw Error(ErrorKind::Usage,
                o.dir + " holds no level1/, level2/, ... directories of KernelBench problems");
  std::set<int> numbers;
  std::stringstream selection(o.problems);
  for (std::string item; std::getline(selection, item, ',');) {
    try {
      numbers.insert(std::stoi(item));
    } catch (const std::exception&) {
      throw Error(ErrorKind::Usage, "bad problem numbers '" + o.problems + "': expected e.g. 1,23,95");
    }
  }
  std::vector<std::tuple<int, int, nlohmann::json>> found;
  for (const auto& dir : fs::directory_iterator(root)) {
    std::smatch level;
    const std::string dir_name = dir.path().filename().string();
    if (!dir.is_directory() || !std::regex_match(dir_name, level, level_dir)) continue;
    const int level_number = std::stoi(level[1]);
    if (o.level > 0 && level_number != o.level) continue;
    for (const auto& file : fs::directory_iterator(dir.path())) {
      std::smatch parts;
      const std::string name = file.path().filename().string();
      if (!std::regex_match(name, parts, problem_file)) continue;
      const int number = std::stoi(parts[1]);
      if (!numbers.empty() && !numbers.contains(number)) continue;
      found.emplace_back(level_number, number,
                         nlohmann::json{{"key", dir_name + "/" + name},
                                        {"level", level_number},
                                        {"number", number},
                                        {"name", parts[2]},
                                        {"path", fs::absolute(file.path()).string()}});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  nlohmann::json rows = nlohmann::json::array();
  for (auto& [level_number, number, row] : found) rows.push_back(std::move(row));
  return rows;
}

void solve_with_ours(const LoopOptions& o, const std::string& device_type, nlohmann::json& row) {
  const fs::path ws = workspace_of(o, row);
  const Backend backend = device_type == "cuda" ? Backend::Cuda : Backend::Host;
  nlohmann::json record;
  try {
    extract_ours(ws, backend, o.top);
    if (o.proposer == "search") optimize_ours(ws, o.optimize_args, o.progress);
    record = judged(o, row, write_ours_solution(ws, row["path"].get<std::string>(), backend));
    if (record.is_null()) return;
  } catch (const Error& e) {  // a kernel that does not build, a loop that failed: this problem only
    if (e.kind() == ErrorKind::Unsupported) throw;  // no Python with PyTorch, no GPU: every problem alike
    record = failed_record(problem_of(row), (ws / kSolutionFile).string(),
                           e.kind() == ErrorKind::Compile ? "COMPILE_ERROR" : "CRASH", e.what());
  }
  write_json(ws / "eval.json", record);
  announce(o, row, record);
  row["record"] = record;
}

void solve_with_agent(const LoopOptions& o, nlohmann::json& row) {
  const fs::path ws = fs::absolute(workspace_of(o, row));
  fs::create_directories(ws);
  const fs::path solution = ws / "solution.py", prompt = ws / "prompt.md", last_file = ws / "eval.json";
  // Confined: it writes its solution in its own directory and nothing else (core/sandbox.h).
  const ConfinedCommand confined = confined_shell(o.agent_cmd, {}, ws);
  nlohmann::json last;
  for (int attempt = 1; attempt <= o.attempts; ++attempt) {
    fs::remove(solution);
    write_file_atomically(prompt, prompt_for(row, last));
    ProcessOptions options;
    options.timeout = std::chrono::seconds(o.agent_timeout_s);
    options.cwd = ws;
    options.env = {{"AK_KB_PROBLEM", row["path"].get<std::string>()},
                   {"AK_KB_SOLUTION", solution.string()},
                   {"AK_KB_PROMPT", prompt.string()},
                   {"AK_KB_ATTEMPT", std::to_string(attempt)},
                   {"AK_KB_LAST_RECORD", last.is_null() ? "" : last_file.string()}};
    options.env.insert(options.env.end(), confined.env.begin(), confined.env.end());
    const ProcessResult agent = run_process(confined.argv, options);
    if (!agent.ok() || !fs::exists(solution))
      last = failed_record(problem_of(row), solution.string(), "COMPILE_ERROR",
                           "the agent wrote no solution (" + agent.describe() + "): " + agent.tail(1));
    else
      last = judged(o, row, solution);
    if (last.is_null()) return;  // the problem itself is malformed
    last["attempt"] = attempt;
    write_json(last_file, last);
    announce(o, row, last);
    if (last["status"] == "PASS") break;
  }
  row["record"] = last;
}

nlohmann::json summarize(const nlohmann::json& rows, const std::string& baseline) {
  std::vector<Scored> attempted;
  for (const auto& row : rows)
    if (row.contains("record")) attempted.push_back(scored(row["record"], baseline));
  return {{"problems", rows}, {"scores", to_json(score(attempted, {0, 1, 2}), baseline)}};
}

}  // namespace ak::cli::kb
