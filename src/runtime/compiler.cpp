#include "runtime/compiler.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "runtime/triton_build.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// Looked up once per process: every build (and every cache key) needs it.
std::string find_nvcc() {
  std::string path = env_or("AK_NVCC", "");
  if (!path.empty()) return path;
  if (run_process({"sh", "-c", "command -v nvcc"}).ok()) return "nvcc";
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  throw Error(ErrorKind::Unsupported, "nvcc not found (install the CUDA toolkit or set AK_NVCC)");
}

const std::string& nvcc_path() {
  static const std::string path = find_nvcc();  // a throw leaves it unset, to be tried again
  return path;
}

// Per backend: the compiler and the flags every module is built with.
struct Toolchain {
  std::string compiler;
  std::vector<std::string> flags;
};

Toolchain toolchain(const BuildRequest& r) {
  const std::string include = "-I" + (project_dir() / "include").string();
  if (r.backend == Backend::Cuda) {
    // sm_XX: that GPU's code; compute_XX: that virtual architecture's PTX alone, which the driver
    // compiles for the device at load (an earlier target's code paths, run on a later GPU).
    const std::string arch = r.arch.empty() ? "sm_90a" : r.arch;
    const bool ptx_only = arch.rfind("compute_", 0) == 0;
    const std::string compute = ptx_only ? arch : "compute_" + arch.substr(3);
    return {nvcc_path(),
            {"-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-lineinfo",
             "--resource-usage", "-gencode=arch=" + compute + ",code=" + arch, include}};
  }
  return {
      env_or("AK_HOST_CXX", "c++"),
      {"-std=c++20", "-O3", "-march=native", "-fPIC", "-shared", "-fopenmp", "-Werror=return-type", include}};
}

// The compiler's version joins the cache key: a toolkit upgrade rebuilds everything.
const std::string& compiler_version(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  auto [it, inserted] = versions.try_emplace(compiler);
  if (inserted) it->second = run_process({compiler, "--version"}).output;
  return it->second;
}

std::string abi_headers() {
  std::string all;
  for (const auto& entry : fs::directory_iterator(project_dir() / "include" / "autokernel"))
    if (entry.is_regular_file()) all += read_text_file(entry.path());
  return all;
}

}  // namespace

std::vector<std::string> compile_command(const BuildRequest& r, const fs::path& output) {
  Toolchain tc = toolchain(r);
  std::vector<std::string> argv{tc.compiler};
  argv.insert(argv.end(), tc.flags.begin(), tc.flags.end());
  for (const auto& [name, value] : r.defines) argv.push_back("-D" + name + "=" + value);
  argv.push_back(r.source.string());
  argv.push_back("-o");
  argv.push_back(output.string());
  return argv;
}

std::string first_error_lines(const std::string& log, size_t max_lines) {
  std::istringstream in(log);
  std::vector<std::string> lines;
  std::string line;
  bool seen_error = false;
  while (std::getline(in, line) && lines.size() < max_lines) {
    if (!seen_error && line.find("error") == std::string::npos) continue;
    seen_error = true;
    lines.push_back(line);
  }
  if (lines.empty()) return printable(log.substr(0, 2000), true);
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return printable(std::move(out), true);  // the compiler quotes the kernel's source
}

BuildResult build_module(const BuildRequest& r) {
  if (!fs::is_regular_file(r.source))
    throw Error(ErrorKind::Io, "kernel file not found: " + r.source.string());
  const std::string source = read_text_file(r.source);
  const std::string ext = r.source.extension().string();
  const bool triton = is_triton_source(r.source);
  if (r.backend == Backend::Cuda && ext != ".cu" && !triton)
    throw Error(ErrorKind::Usage, r.source.string() + ": the cuda backend builds .cu and Triton .py files");
  if (r.backend == Backend::Host && ext != ".cpp" && ext != ".cc")
    throw Error(ErrorKind::Usage, r.source.string() + ": the host backend builds .cpp files");

  std::string key;
  if (triton) {
    key = content_hash({source, triton_cache_material(r), abi_headers()});
  } else {
    std::string command;
    for (const auto& a : compile_command(r, "OUT")) command += a + " ";
    key = content_hash({source, command, compiler_version(toolchain(r).compiler), abi_headers()});
  }
  const fs::path dir = cache_dir() / "modules";
  fs::create_directories(dir);
  const fs::path module = dir / (key + ".so");
  const fs::path log_path = dir / (key + ".log");

  BuildResult result;
  result.module = module;
  if (fs::exists(module)) {
    result.cached = true;
    if (fs::exists(log_path)) result.log = read_text_file(log_path);
    return result;
  }
  // Unique temporary name: parallel builds of the same key must not see each other's halves.
  std::ostringstream tmp_name;
  tmp_name << key << ".tmp." << ::getpid() << "." << std::this_thread::get_id() << ".so";
  const fs::path tmp = dir / tmp_name.str();
  if (triton) {
    try {
      TritonBuild built = build_triton_module(r, tmp);
      result.seconds = built.seconds;
      result.log = std::move(built.log);
    } catch (const Error&) {
      fs::remove(tmp);
      throw;
    }
    write_file_atomically(log_path, result.log);
    fs::rename(tmp, module);
    return result;
  }
  ProcessOptions options;
  options.timeout = r.timeout;
  const ProcessResult run = run_process(compile_command(r, tmp), options);
  result.seconds = run.seconds;
  result.log = run.output;
  if (run.timed_out) {
    fs::remove(tmp);
    throw Error(ErrorKind::Timeout, "compiling " + r.source.filename().string() + " " + run.describe());
  }
  if (!run.ok()) {
    fs::remove(tmp);
    throw Error(ErrorKind::Compile, "compile error in " + r.source.filename().string() + " (" +
                                        run.describe() + "):\n" + first_error_lines(run.output, 12));
  }
  write_file_atomically(log_path, run.output);
  fs::rename(tmp, module);
  return result;
}

}  // namespace ak
