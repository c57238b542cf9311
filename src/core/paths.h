// Where things live: the compile/ceilings cache, the project's own files, this executable.
#pragma once

#include <filesystem>
#include <string>

namespace ak {

// $AUTOKERNEL_CACHE, else $XDG_CACHE_HOME/autokernel, else ~/.cache/autokernel (created).
std::filesystem::path cache_dir();
// $AUTOKERNEL_HOME, else the source tree this binary was built from (include/, kernels/).
std::filesystem::path project_dir();
// The running executable (for spawning workers).
std::filesystem::path self_executable();

std::string read_text_file(const std::filesystem::path& path);  // throws Error(Io)
// Writes through a temporary file and a rename, so readers never see half a file.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Hex digest (XXH3-128) of the given pieces, for content-addressed caches.
std::string content_hash(std::initializer_list<std::string_view> pieces);

std::string utc_timestamp();  // 2026-11-22T04:36:07Z

// A fresh directory in the temporary directory (PREFIX-XXXXXX, mode 0700), removed with everything
// in it on destruction. Throws Error(Io) when it cannot be made.
class TempDirectory {
 public:
  explicit TempDirectory(std::string_view prefix);
  ~TempDirectory();
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ak
