#include "runtime/triton_build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "core/subprocess.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

std::string trimmed(std::string s) {
  s.erase(s.find_last_not_of(" \r\n\t") + 1);
  return s;
}

// The CUDA toolkit the launcher is built against: cuda.h and the libcuda stub (the module links
// the driver; the real libcuda.so.1 is the one already loaded where it runs).
struct CudaToolkit {
  fs::path include, stubs;
};

std::optional<CudaToolkit> toolkit_at(const fs::path& root) {
  if (root.empty() || !fs::exists(root / "include" / "cuda.h")) return std::nullopt;
  for (const fs::path& stubs : {root / "lib64" / "stubs", root / "targets" / "x86_64-linux" / "lib" / "stubs",
                                root / "targets" / "sbsa-linux" / "lib" / "stubs"})
    if (fs::exists(stubs / "libcuda.so")) return CudaToolkit{root / "include", stubs};
  return std::nullopt;
}

CudaToolkit find_toolkit() {
  std::vector<fs::path> roots;
  for (const char* name : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(name); v && *v) roots.emplace_back(v);
  if (const char* nvcc = std::getenv("AK_NVCC"); nvcc && *nvcc)
    roots.push_back(fs::weakly_canonical(nvcc).parent_path().parent_path());
  const ProcessResult which = run_process({"sh", "-c", "command -v nvcc"});
  if (which.ok()) roots.push_back(fs::weakly_canonical(trimmed(which.output)).parent_path().parent_path());
  roots.emplace_back("/usr/local/cuda");
  for (const auto& root : roots)
    if (auto found = toolkit_at(root)) return *found;
  throw Error(ErrorKind::Unsupported,
              "the Triton backend needs the CUDA toolkit's cuda.h and libcuda stub for its launcher "
              "(set CUDA_HOME)");
}

// Everything found once per process: a build of a cached module should not pay for it twice.
struct TritonToolchain {
  std::string python, triton_version, host_cxx, host_cxx_version, driver_sources;
  CudaToolkit cuda;
};

TritonToolchain find_toolchain() {
  TritonToolchain t;
  std::string tried;
  const auto python = find_python("triton", tried);
  if (!python)
    throw Error(ErrorKind::Unsupported,
                "the Triton backend needs a Python with triton (tried " + tried +
                    "); install it (scripts/install-python.sh) or set AUTOKERNEL_PYTHON");
  t.python = *python;
  const ProcessResult version =
      run_process({t.python, "-c", "import importlib.metadata as m; print(m.version('triton'))"});
  t.triton_version = trimmed(version.output);
  const char* cxx = std::getenv("AK_HOST_CXX");
  t.host_cxx = cxx && *cxx ? cxx : "c++";
  t.host_cxx_version = run_process({t.host_cxx, "--version"}).output;
  for (const char* file : {"aot.py", "spec.py", "expr.py", "launcher.py"})
    t.driver_sources += read_text_file(project_dir() / "python" / "autokernel_triton" / file);
  t.cuda = find_toolkit();
  return t;
}

const TritonToolchain& toolchain() {
  static std::mutex mutex;
  static std::optional<TritonToolchain> found;
  std::lock_guard lock(mutex);
  if (!found) found = find_toolchain();  // a throw leaves it unset, to be tried again
  return *found;
}

std::vector<std::string> launcher_command(const fs::path& launcher, const fs::path& output) {
  const TritonToolchain& t = toolchain();
  return {t.host_cxx,
          "-std=c++17",
          "-O2",
          "-fPIC",
          "-shared",
          "-I" + (project_dir() / "include").string(),
          "-I" + t.cuda.include.string(),
          launcher.string(),
          "-o",
          output.string(),
          "-L" + t.cuda.stubs.string(),
          "-lcuda"};
}

std::string arch_of(const BuildRequest& r) {
  return r.arch.empty() ? "sm_90a" : r.arch;
}

// The driver's one-line reason (FILE:LINE: message), else the tail of what it printed.
std::string driver_reason(const BuildRequest& r, const ProcessResult& run) {
  const std::string prefix = fs::absolute(r.source).lexically_normal().string() + ":";
  std::istringstream in(run.output);
  std::string line, reason;
  while (std::getline(in, line))
    if (line.starts_with(prefix)) reason = line;
  if (!reason.empty()) return r.source.string() + reason.substr(prefix.size() - 1);
  return r.source.string() + ": the Triton compiler failed (" + run.describe() + "): " + run.tail(3);
}

// A scratch directory for one build's cubins and launcher, removed when the build ends.
class WorkDir {
 public:
  explicit WorkDir(const fs::path& output) {
    std::ostringstream name;
    name << output.filename().string() << ".work." << ::getpid() << "." << std::this_thread::get_id();
    path_ = cache_dir() / "triton-work" / name.str();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~WorkDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Triton builds in flight in this process: tune and the loop build several candidates at once,
// and each build's compiler forks workers of its own; together they share the machine's threads
// (each worker holds an MLIR context of a few hundred MB).
std::atomic<int> g_builds_in_flight{0};

int compile_workers() {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, threads / std::max(1, g_builds_in_flight.load()));
}

}  // namespace

bool is_triton_source(const fs::path& source) {
  return source.extension() == ".py";
}

std::vector<std::string> triton_compile_command(const BuildRequest& r, const fs::path& work_dir) {
  std::vector<std::string> argv{toolchain().python,
                                "-m",
                                "autokernel_triton.aot",
                                "build",
                                "--source",
                                fs::absolute(r.source).lexically_normal().string(),
                                "--out",
                                work_dir.string(),
                                "--arch",
                                arch_of(r)};
  for (const auto& [name, value] : r.defines) argv.push_back("-D" + name + "=" + value);
  argv.push_back("--jobs");
  argv.push_back(std::to_string(compile_workers()));
  return argv;
}

std::string triton_cache_material(const BuildRequest& r) {
  const TritonToolchain& t = toolchain();
  std::string material = "triton " + t.triton_version + "\n" + t.python + "\n" + t.driver_sources +
                         t.host_cxx_version + "\narch " + arch_of(r) + "\n";
  for (const auto& a : launcher_command("LAUNCHER", "OUT")) material += a + " ";
  for (const auto& [name, value] : r.defines) material += "\n-D" + name + "=" + value;
  return material;
}

TritonBuild build_triton_module(const BuildRequest& r, const fs::path& output) {
  ++g_builds_in_flight;
  struct Leave {
    ~Leave() { --g_builds_in_flight; }
  } leave;
  const WorkDir work(output);
  const auto start = std::chrono::steady_clock::now();
  const auto left = [&] {
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return std::max(std::chrono::milliseconds(1), std::chrono::milliseconds(r.timeout) - spent);
  };
  ProcessOptions options;
  options.timeout = left();
  options.env = {{"PYTHONPATH", (project_dir() / "python").string()}, {"TRITON_DEFAULT_FP_FUSION", "1"}};
  const std::string name = r.source.filename().string();
  TritonBuild build;
  const ProcessResult aot = run_process(triton_compile_command(r, work.path()), options);
  build.log = aot.output;
  if (aot.timed_out) throw Error(ErrorKind::Timeout, "compiling " + name + " with Triton " + aot.describe());
  if (!aot.ok()) throw Error(ErrorKind::Compile, driver_reason(r, aot));

  ProcessOptions link;
  link.timeout = left();
  const ProcessResult cxx = run_process(launcher_command(work.path() / "launcher.cpp", output), link);
  build.log += cxx.output;
  if (cxx.timed_out)
    throw Error(ErrorKind::Timeout, "compiling the launcher of " + name + " " + cxx.describe());
  if (!cxx.ok())
    throw Error(ErrorKind::Compile, "compile error in the launcher of " + name + " (" + cxx.describe() +
                                        "):\n" + first_error_lines(cxx.output, 12));
  build.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return build;
}

}  // namespace ak
