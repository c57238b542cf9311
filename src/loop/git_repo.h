// The loop's workspace is a git repository of its own: each kept experiment is one commit on
// the run's branch, and a revert is `git reset --hard` to the last kept commit. This wraps the
// git command line (git itself, not a reimplementation); every failure is an Error(Io) that
// carries git's own message.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ak {

class GitRepo {
 public:
  explicit GitRepo(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // `git init` with a local identity (so commits work where no global one is set).
  static GitRepo init(const std::filesystem::path& dir);
  bool exists() const;  // the directory is a repository's top level

  std::string head() const;            // the full hash of HEAD
  std::string current_branch() const;  // "" on a detached HEAD
  bool branch_exists(const std::string& name) const;
  void create_branch(const std::string& name);  // from HEAD, and switches to it
  void checkout(const std::string& branch);

  // Stages every change (new, modified, deleted files; .gitignore respected) and commits.
  // Returns the new commit's hash.
  std::string commit_all(const std::string& message);
  // Tracked files back to `commit`, untracked non-ignored files removed: the tree is exactly
  // that commit's.
  void reset_hard(const std::string& commit);
  bool is_clean() const;  // no change to tracked files, no untracked non-ignored files

  // Commit hashes on the current branch from the newest back, with their subject lines.
  struct Entry {
    std::string hash;
    std::string subject;
  };
  std::vector<Entry> log(size_t max_count = 100000) const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::string git(const std::vector<std::string>& args) const;  // stdout, trimmed; throws Error(Io)
  std::filesystem::path dir_;
};

}  // namespace ak
