#include "loop/git_repo.h"

#include <sstream>

#include "core/error.h"
#include "core/subprocess.h"

namespace ak {
namespace {

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::string GitRepo::git(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"git", "-C", dir_.string(), "-c", "core.hooksPath=/dev/null"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.timeout = std::chrono::minutes(2);
  const ProcessResult run = run_process(argv, options);
  if (!run.ok()) {
    std::string command = "git";
    for (const auto& a : args) command += " " + a;
    throw Error(ErrorKind::Io,
                command + " in " + dir_.string() + " failed (" + run.describe() + "): " + run.tail(3));
  }
  return trim(run.output);
}

GitRepo GitRepo::init(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  GitRepo repo(dir);
  repo.git({"init", "-q"});
  repo.git({"config", "user.name", "autokernel"});
  repo.git({"config", "user.email", "autokernel@localhost"});
  repo.git({"config", "commit.gpgsign", "false"});
  return repo;
}

bool GitRepo::exists() const {
  std::error_code ec;
  return std::filesystem::exists(dir_ / ".git", ec);
}

std::string GitRepo::head() const {
  return git({"rev-parse", "HEAD"});
}

std::string GitRepo::current_branch() const {
  return git({"branch", "--show-current"});
}

bool GitRepo::branch_exists(const std::string& name) const {
  return !git({"branch", "--list", name}).empty();
}

void GitRepo::create_branch(const std::string& name) {
  git({"checkout", "-q", "-b", name});
}

void GitRepo::checkout(const std::string& branch) {
  git({"checkout", "-q", branch});
}

std::string GitRepo::commit_all(const std::string& message) {
  git({"add", "-A"});
  git({"commit", "-q", "--allow-empty", "-m", message});
  return head();
}

void GitRepo::reset_hard(const std::string& commit) {
  git({"reset", "-q", "--hard", commit});
  git({"clean", "-q", "-fd"});
}

bool GitRepo::is_clean() const {
  return git({"status", "--porcelain"}).empty();
}

std::vector<GitRepo::Entry> GitRepo::log(size_t max_count) const {
  std::vector<Entry> entries;
  std::istringstream lines(git({"log", "--format=%H %s", "-n", std::to_string(max_count)}));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    entries.push_back({line.substr(0, space), line.substr(space + 1)});
  }
  return entries;
}

}  // namespace ak
