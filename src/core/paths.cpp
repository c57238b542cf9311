#include "core/paths.h"

#define XXH_INLINE_ALL
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ak {
namespace fs = std::filesystem;

fs::path cache_dir() {
  fs::path dir;
  if (const char* env = std::getenv("AUTOKERNEL_CACHE"); env && *env) {
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = fs::path(xdg) / "autokernel";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".cache" / "autokernel";
  } else {
    dir = fs::temp_directory_path() / "autokernel-cache";
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::Io, "cannot create cache directory " + dir.string() + ": " + ec.message());
  return dir;
}

fs::path project_dir() {
  if (const char* env = std::getenv("AUTOKERNEL_HOME"); env && *env) return env;
  return AK_SOURCE_DIR;
}

fs::path self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(ErrorKind::Io, "cannot resolve /proc/self/exe: " + ec.message());
  return p;
}

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorKind::Io, "cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out.flush())
      throw Error(ErrorKind::Io, "cannot write " + tmp.string() + ": " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw Error(ErrorKind::Io,
                "cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

std::string content_hash(std::initializer_list<std::string_view> pieces) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (std::string_view piece : pieces) {
    const uint64_t size = piece.size();  // length-prefix so ("ab","c") != ("a","bc")
    XXH3_128bits_update(state, &size, sizeof size);
    XXH3_128bits_update(state, piece.data(), piece.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

TempDirectory::TempDirectory(std::string_view prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw Error(ErrorKind::Io, "cannot create a directory in " +
                                   std::filesystem::temp_directory_path().string() + ": " +
                                   std::strerror(errno));
  path_ = pattern;
}

TempDirectory::~TempDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace ak
