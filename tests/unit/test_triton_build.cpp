// The Triton backend's compiler on a machine without a GPU: every Triton starter compiles ahead of
// time for sm_90a through the engine's own cache (Triton bundles ptxas), a rebuild is a cache
// hit, fp32 dot products stay IEEE (no TF32 in the PTX), and a bad kernel file is one
// Error(Compile) line that names the file and the line at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/lint.h"
#include "runtime/compiler.h"
#include "runtime/triton_build.h"

namespace ak {
namespace {
namespace fs = std::filesystem;

const fs::path kTritonKernels = fs::path(AK_SOURCE_DIR) / "kernels" / "triton";

std::vector<fs::path> triton_kernels() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kTritonKernels))
    if (entry.path().extension() == ".py") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Builds, or skips the test where this machine has no Python with Triton or no CUDA toolkit.
BuildResult build_or_skip(const fs::path& file, const Defines& defines = {}) {
  return build_module({file, defines, Backend::Cuda, "sm_90a", std::chrono::seconds(600)});
}

#define BUILD_OR_SKIP(result, ...)                                                       \
  try {                                                                                  \
    result = build_or_skip(__VA_ARGS__);                                                 \
  } catch (const Error& e) {                                                             \
    if (e.kind() == ErrorKind::Unsupported) GTEST_SKIP() << e.what(); /* no toolchain */ \
    FAIL() << e.what();                                                                  \
  }

TEST(TritonBuild, EveryStarterCompilesAheadOfTimeForSm90a) {
  const auto files = triton_kernels();
  ASSERT_EQ(files.size(), 9u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    EXPECT_TRUE(lint_kernel_source(read_text_file(file)).empty());
    BuildResult build;
    BUILD_OR_SKIP(build, file);
    EXPECT_TRUE(fs::exists(build.module));
    EXPECT_GT(fs::file_size(build.module), 8000u);  // the cubins are inside
  }
}

TEST(TritonBuild, AnUnchangedKernelIsACacheHitAndATuningValueIsNot) {
  const fs::path file = kTritonKernels / "rmsnorm.py";
  BuildResult first, again, tuned;
  BUILD_OR_SKIP(first, file);
  BUILD_OR_SKIP(again, file);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.module, first.module);
  BUILD_OR_SKIP(tuned, file, Defines{{"BLOCK_N", "4096"}, {"NUM_WARPS", "8"}});
  EXPECT_NE(tuned.module, first.module);
}

// The PTX of every fp32 cubin of the three tl.dot kernels: no tf32 anywhere.
TEST(TritonBuild, Fp32DotProductsAreIeeeNotTf32) {
  for (const char* op : {"matmul", "fused_mlp", "flash_attention"}) {
    SCOPED_TRACE(op);
    const fs::path dir = test::scratch_dir(std::string("triton-ptx-") + op);
    const BuildRequest request{kTritonKernels / (std::string(op) + ".py"), {}, Backend::Cuda, "sm_90a"};
    std::vector<std::string> argv;
    try {
      argv = triton_compile_command(request, dir);
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
    argv.push_back("--ptx");
    ProcessOptions options;
    options.timeout = std::chrono::seconds(600);
    options.env = {{"PYTHONPATH", (project_dir() / "python").string()},
                   {"TRITON_CACHE_DIR", (cache_dir() / "triton").string()}};
    const ProcessResult run = run_process(argv, options);
    ASSERT_TRUE(run.ok()) << run.output;
    // The launcher labels each cubin: "{ak_cubin_4, ...},  // matmul_kernel fp32 aligned".
    const std::string launcher = read_text_file(dir / "launcher.cpp");
    const std::regex fp32_cubin(R"(\{ak_cubin_(\d+),[^\n]*// \w+ fp32)");
    int fp32 = 0;
    for (std::sregex_iterator it(launcher.begin(), launcher.end(), fp32_cubin), end; it != end;
         ++it, ++fp32) {
      const std::string ptx = read_text_file(dir / (std::string("k").append((*it)[1].str()) + ".ptx"));
      EXPECT_EQ(ptx.find("tf32"), std::string::npos) << "cubin " << (*it)[1];
      EXPECT_NE(ptx.find("fma.rn.f32"), std::string::npos) << "cubin " << (*it)[1];
    }
    EXPECT_GT(fp32, 0);
    fs::remove_all(dir);
  }
}

// A kernel file written for the test: the rmsnorm starter with one line replaced.
fs::path broken_copy(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = read_text_file(kTritonKernels / "rmsnorm.py");
  const size_t at = text.find(from);
  if (at == std::string::npos) throw Error(ErrorKind::Internal, "the test's anchor is gone: " + from);
  text.replace(at, from.size(), to);
  const fs::path file = test::scratch_dir(std::string("triton-bad-").append(name)) / (name + ".py");
  std::ofstream(file) << text;
  return file;
}

int line_of(const fs::path& file, const std::string& text) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return n;
  return -1;
}

// Builds `file` expecting Error(Compile) with one line naming the file at `line`.
void expect_compile_error(const fs::path& file, int line, const std::string& words,
                          const Defines& defines = {}) {
  SCOPED_TRACE(file.filename().string());
  ASSERT_GT(line, 0);
  try {
    build_or_skip(file, defines);
    ADD_FAILURE() << "built";
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported) GTEST_SKIP() << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Compile) << e.what();
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(file.filename().string() + ":" + std::to_string(line) + ":"), std::string::npos)
        << what;
    EXPECT_NE(what.find(words), std::string::npos) << what;
  }
  fs::remove_all(file.parent_path());
}

TEST(TritonBuild, BadFilesAreOneLineCompileErrorsAtTheirLine) {
  const fs::path syntax =
      broken_copy("syntax", "    cols = tl.arange(0, BLOCK_N)\n", "    cols = tl.arange(0, BLOCK_N\n");
  expect_compile_error(syntax, line_of(syntax, "cols = tl.arange(0, BLOCK_N"), "syntax error");

  const fs::path missing = broken_copy("missing", "\"n_cols\": \"N\"", "\"n_colz\": \"N\"");
  expect_compile_error(missing, line_of(missing, "n_colz"), "not a parameter of rmsnorm_row");

  const fs::path zero = broken_copy("zero", "\"grid\": (\"M\",)", "\"grid\": (\"M - M\",)");
  expect_compile_error(zero, line_of(zero, "M - M"), "is 0 for a problem whose every size is 1");

  const fs::path huge = broken_copy("huge", "\"grid\": (\"M\",)", "\"grid\": (\"M\", 70000)");
  expect_compile_error(huge, line_of(huge, "70000"), "CUDA takes 1..65535");

  const fs::path body = broken_copy("body", "    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)\n",
                                    "    inv_rms = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + epsilon)\n");
  expect_compile_error(body, line_of(body, "+ epsilon"), "epsilon");

  const fs::path name = broken_copy("unknown", "\"n_cols\": \"N\"", "\"n_cols\": \"NN\"");
  expect_compile_error(name, line_of(name, "\"NN\""), "unknown name NN");

  const fs::path tuned = broken_copy("define", "BLOCK_N = 8192\n", "BLOCKN = 8192\n");
  expect_compile_error(tuned, 1, "no module-level `BLOCK_N = ...`", {{"BLOCK_N", "4096"}});
}

// A kernel file is Python, and it runs in the compiler: a hostile one tries, at load time, what
// would change a later verdict (a file beside the kernel, a module planted in the engine's cache,
// a shell, a signal to the engine, a socket), every name built at run time. It fails its own
// build if any of that worked, so a build that succeeds means the compiler confined it.
const char* const kEscapes = R"(import importlib as _i
_o, _s = _i.import_module("o" + "s"), _i.import_module("sock" + "et")
_escaped = []
def _try(name, action):
    try:
        action()
        _escaped.append(name)
    except OSError:
        pass
_try("wrote beside the kernel", lambda: open(MARKERS + "/written", "w").write("x"))
_try("planted in the cache", lambda: open(_o.environ["AUTOKERNEL_CACHE"] + "/planted", "w").write("x"))
_try("signalled the engine", lambda: getattr(_o, "ki" + "ll")(_o.getppid(), 0))
_try("bound a socket", lambda: _s.socket().bind(("127.0.0.1", 0)))
if getattr(_o, "sys" + "tem")("touch " + MARKERS + "/by_shell 2>/dev/null") == 0:
    _escaped.append("ran a shell that wrote")
if _escaped:
    raise SystemExit("escaped: " + ", ".join(_escaped))
)";

TEST(TritonBuild, AKernelFilesCodeChangesNothingOutsideItsBuild) {
  const fs::path markers = test::scratch_dir("triton-escape-markers");
  const fs::path file =
      broken_copy("escapes", "import triton\n",
                  "MARKERS = \"" + markers.string() + "\"\n" + kEscapes + "import triton\n");
  const fs::path planted = cache_dir() / "planted";
  BuildResult build;
  BUILD_OR_SKIP(build, file);  // fails, naming what escaped, unless the compiler confined the file
  EXPECT_TRUE(fs::is_empty(markers));
  EXPECT_FALSE(fs::exists(planted));

  // The same file unconfined (a trusted file's opt-out) gets out: the test can tell.
  ::setenv("AUTOKERNEL_UNCONFINED", "1", 1);
  std::string unconfined;
  try {
    build_or_skip(file, {{"BLOCK_N", "4096"}});
  } catch (const Error& e) {
    unconfined = e.what();
  }
  ::unsetenv("AUTOKERNEL_UNCONFINED");
  EXPECT_NE(unconfined.find("escaped: wrote beside the kernel, planted in the cache, signalled the engine"),
            std::string::npos)
      << unconfined;
  fs::remove(planted);
  fs::remove_all(markers);
  fs::remove_all(file.parent_path());
}

}  // namespace
}  // namespace ak
