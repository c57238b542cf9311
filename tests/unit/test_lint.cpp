#include <gtest/gtest.h>

#include <set>

#include "harness/lint.h"

namespace ak {
namespace {

bool has_rule(const std::vector<LintFinding>& findings, std::string_view rule) {
  for (const auto& f : findings)
    if (f.rule == rule) return true;
  return false;
}

std::string all(const std::vector<LintFinding>& findings) {
  std::string out;
  for (const auto& f : findings) out += describe(f) + "\n";
  return out;
}

// One minimal offending line per rule (some rules have several forms).
struct Case {
  std::string_view rule;
  std::string_view snippet;
};

constexpr Case kCases[] = {
    {"__attribute__((constructor))", "__attribute__((constructor)) static void init() {}"},
    {"__attribute__((constructor))", "static void __attribute__ ((used, destructor(101))) fini() {}"},
    {"[[gnu::constructor]]", "[[gnu::constructor]] void init() {}"},
    {"#pragma init", "#pragma init(setup)"},
    {".init_array", "__attribute__((section(\".init_array\"))) void (*hook)() = setup;"},
    {"atexit", "std::atexit(cleanup);"},
    {"dlopen", "void* h = dlopen(\"libcuda.so\", 0);"},
    {"dlsym", "auto f = dlsym(h, \"ak_time\");"},
    {"dlmopen", "void* h = dlmopen(LM_ID_NEWLM, path, 0);"},
    {"dladdr", "dl_iterate_phdr(visit, nullptr);"},
    {"RTLD_", "void* self = RTLD_DEFAULT;"},
    {"std::thread", "std::thread worker([] {});"},
    {"std::jthread", "std :: jthread worker([] {});"},
    {"std::async", "auto f = std::async(std::launch::async, work);"},
    {"pthread_create", "pthread_create(&t, nullptr, run, nullptr);"},
    {"fork", "pid_t pid = fork();"},
    {"vfork", "pid_t pid = vfork();"},
    {"exec", "execvp(\"sh\", argv);"},
    {"system", "system (\"nvidia-smi\");"},
    {"popen", "FILE* f = popen(cmd, \"r\");"},
    {"posix_spawn", "posix_spawnp(&pid, \"sh\", nullptr, nullptr, argv, envp);"},
    {"syscall", "syscall(SYS_clone, 0);"},
    {"cudaStreamCreate", "cudaStreamCreate(&side);"},
    {"cudaStreamCreate", "cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);"},  // prefix, on purpose
    {"cuStreamCreate", "cuStreamCreate(&side, 0);"},
    {"cudaStreamPerThread", "kernel<<<1, 32, 0, cudaStreamPerThread>>>(x);"},
    {"cudaLaunchHostFunc", "cudaLaunchHostFunc(stream, callback, nullptr);"},
    {"cudaStreamAddCallback", "cudaStreamAddCallback(stream, callback, nullptr, 0);"},
    {"cuLaunchHostFunc", "cuLaunchHostFunc(stream, callback, nullptr);"},
    {"clock", "clock_t t0 = clock();"},
    {"clock_gettime", "clock_gettime(CLOCK_MONOTONIC, &ts);"},
    {"gettimeofday", "gettimeofday(&tv, nullptr);"},
    {"std::chrono", "auto t = std::chrono::steady_clock::now();"},
    {"cudaEventElapsedTime", "cudaEventElapsedTime(&ms, start, stop);"},
    {"cudaEventRecord", "cudaEventRecord(start, stream);"},
    {"%globaltimer", "asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));"},
    {"rdtsc", "uint64_t t = __rdtsc();"},
    {"cudaDeviceSynchronize", "cudaDeviceSynchronize();"},
    {"cudaDeviceReset", "cudaDeviceReset();"},
    {"cudaSetDevice", "cudaSetDevice(1);"},
    {"mprotect", "mprotect(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);"},
    {"/proc/self", "int fd = open(\"/proc/self/mem\", O_RDWR);"},
    {"signal", "signal(SIGSEGV, on_fault);"},
    {"sigaction", "struct sigaction sa{};"},
    {"setjmp", "if (setjmp(env)) return 1;"},
    {"longjmp", "longjmp(env, 1);"},
    {"#include <thread>", "#include <thread>"},
    {"#include <future>", "#include <future>"},
    {"#include <pthread.h>", "#include <pthread.h>"},
    {"#include <dlfcn.h>", "#include \"dlfcn.h\""},
    {"#include <chrono>", "#  include <chrono>"},
    {"#include <signal.h>", "#include <signal.h>"},
    {"#include <csignal>", "#include <csignal>"},
    {"#include <setjmp.h>", "#include <csetjmp>"},
    {"#include <spawn.h>", "#include <spawn.h>"},
};

const LintRule& rule_named(std::string_view name) {
  for (const auto& rule : lint_rules())
    if (rule.name == name) return rule;
  throw std::runtime_error("no lint rule " + std::string(name));
}

TEST(Lint, EveryRuleIsTriggeredByItsSnippet) {
  for (const auto& c : kCases) {
    const auto findings = lint_kernel_source("int x;\n" + std::string(c.snippet) + "\n");
    EXPECT_TRUE(has_rule(findings, c.rule)) << c.rule << " missed in: " << c.snippet << "\n" << all(findings);
    for (const auto& f : findings) EXPECT_EQ(f.line, 2) << describe(f);
  }
}

TEST(Lint, EveryRuleHasACaseAndAUniqueName) {
  std::set<std::string_view> covered, names;
  for (const auto& c : kCases) covered.insert(c.rule);
  for (const auto& rule : lint_rules()) {
    EXPECT_TRUE(names.insert(rule.name).second) << "duplicate rule name " << rule.name;
    EXPECT_TRUE(covered.contains(rule.name)) << "no test case for " << rule.name;
    EXPECT_FALSE(rule.why.empty()) << rule.name;
  }
}

TEST(Lint, SameWordsInCommentsDoNotTrigger) {
  for (const auto& c : kCases) {
    const std::string line_comment = "int x;  // " + std::string(c.snippet) + "\n";
    const std::string block_comment = "/* before\n" + std::string(c.snippet) + "\n */ int x;\n";
    EXPECT_EQ(all(lint_kernel_source(line_comment)), "") << c.snippet;
    EXPECT_EQ(all(lint_kernel_source(block_comment)), "") << c.snippet;
  }
}

TEST(Lint, SameWordsInStringsDoNotTriggerCodeRules) {
  for (const auto& c : kCases) {
    if (rule_named(c.rule).scope != LintScope::Code) continue;  // these look inside strings on purpose
    const std::string raw = "const char* doc = R\"doc(" + std::string(c.snippet) + ")doc\";\n";
    EXPECT_FALSE(has_rule(lint_kernel_source(raw), c.rule)) << c.snippet;
    if (c.snippet.find_first_of("\"\\") != std::string_view::npos) continue;
    const std::string plain = "const char* doc = \"" + std::string(c.snippet) + "\";\n";
    EXPECT_FALSE(has_rule(lint_kernel_source(plain), c.rule)) << c.snippet;
  }
}

TEST(Lint, DirectivesCountOnlyAtTheStartOfALine) {
  EXPECT_EQ(all(lint_kernel_source("const char* s = \"#include <thread>\"; int p = 0; // #pragma init\n")),
            "");
  EXPECT_EQ(lint_kernel_source("int a; /* header */ #include <thread>\n").size(), 0u);
  const auto findings = lint_kernel_source("int a;\n  /* header */ #  include <thread>\n");
  ASSERT_EQ(findings.size(), 1u) << all(findings);
  EXPECT_EQ(findings[0].line, 2);
}

TEST(Lint, StaticConstructorIsRejected) {
  const auto findings = lint_kernel_source(
      "#include \"autokernel/abi.h\"\n__attribute__((constructor)) static void init() {}\n");
  ASSERT_EQ(findings.size(), 1u) << all(findings);
  EXPECT_EQ(findings[0].rule, "__attribute__((constructor))");
  EXPECT_EQ(findings[0].line, 2);
  EXPECT_EQ(findings[0].text, "__attribute__((constructor)) static void init() {}");
}

TEST(Lint, LineNumbersSurviveCommentsAndMultiLineLiterals) {
  const std::string source =
      "/* a block comment\n"                    // 1
      "   over two lines */ int a = 1'000;\n"   // 2
      "const char* s = R\"x(one\n"              // 3
      "two \" )\" three)x\"; char q = '\"';\n"  // 4
      "  void* h = dlopen(path, 0);  \n"        // 5
      "// a line comment \\\n"                  // 6
      "   continued: fork();\n"                 // 7
      "std::\n"                                 // 8
      "  thread t;\n";                          // 9
  const auto findings = lint_kernel_source(source);
  ASSERT_EQ(findings.size(), 2u) << all(findings);
  EXPECT_EQ(findings[0].line, 5);
  EXPECT_EQ(findings[0].rule, "dlopen");
  EXPECT_EQ(findings[0].text, "void* h = dlopen(path, 0);");
  EXPECT_EQ(findings[1].line, 8);
  EXPECT_EQ(findings[1].rule, "std::thread");
}

TEST(Lint, DescribeNamesLineRuleReasonAndCode) {
  const auto findings = lint_kernel_source("int x;\n\n  void* h = dlopen(\"x.so\", 0);\n");
  ASSERT_EQ(findings.size(), 1u) << all(findings);
  EXPECT_EQ(describe(findings[0]),
            "line 3: dlopen (dynamic loading can reach into the harness): `void* h = dlopen(\"x.so\", 0);`");
}

TEST(Lint, LookalikeNamesAreAllowed) {
  const auto findings = lint_kernel_source(
      "int my_fork_count = 0; float clock_rate = 1; long long c = clock64();\n"
      "asm volatile(\"mov.u64 %0, %%clock64;\" : \"=l\"(c));\n"
      "int thread = threadIdx.x; execute(thread); signal_value(x); systematic(y);\n"
      "auto id = std::this_thread::get_id; struct constructor_args {};\n");
  EXPECT_EQ(all(findings), "");
}

TEST(Lint, RealisticCudaKernelPasses) {
  constexpr std::string_view kKernel = R"(// rmsnorm: y = x / rms(x) * w. No std::thread, no dlopen here.
// @tune THREADS: 128, 256, 512
// @require THREADS <= N
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "autokernel/abi.h"

namespace {

constexpr int kWarp = 32;
constexpr long kBig = 1'000'000;  // digit separators are not character literals

template <typename T>
__device__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

template <typename T>
__global__ void __launch_bounds__(THREADS) rmsnorm(const T* x, const T* w, T* y, int n, float eps) {
  __shared__ float partial[THREADS / kWarp];
  const T* row = x + static_cast<long>(blockIdx.x) * n;
  float sum = 0.f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) sum += float(row[j]) * float(row[j]);
  sum = warp_sum<T>(sum);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = sum;
  __syncthreads();
  if (threadIdx.x < kWarp) {
    sum = threadIdx.x < THREADS / kWarp ? partial[threadIdx.x] : 0.f;
    partial[0] = warp_sum<T>(sum);
  }
  __syncthreads();
  const float inv = rsqrtf(partial[0] / n + eps);
  for (int j = threadIdx.x; j < n; j += blockDim.x) y[blockIdx.x * n + j] = T(float(row[j]) * inv * float(w[j]));
}

}  // namespace

extern "C" int ak_launch(const ak_call* call) {
  const ak_tensor& x = call->inputs[0];
  auto stream = static_cast<cudaStream_t>(call->stream);
  const int m = static_cast<int>(x.shape[0]), n = static_cast<int>(x.shape[1]);
  const char* why = "fork and dlopen are mentioned only in this string";
  (void)why;
  switch (x.dtype) {
    case AK_F16:
      rmsnorm<__half><<<m, THREADS, 0, stream>>>(static_cast<const __half*>(x.data),
          static_cast<const __half*>(call->inputs[1].data), static_cast<__half*>(call->outputs[0].data), n,
          static_cast<float>(call->scalars[0]));
      break;
    default:
      return AK_ERR_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? AK_OK : AK_ERR_LAUNCH;
}
)";
  EXPECT_EQ(all(lint_kernel_source(kKernel)), "");
}

TEST(Lint, BlankCommentsKeepsLayout) {
  const std::string source =
      "int a; // note\n"
      "char* s = \"x//y\\\"\"; /* c\n"
      " d */ int n = 1'000; char c = '\\'';\n"
      "auto r = R\"(a \" b)\";\n";
  EXPECT_EQ(blank_comments(source, false),
            "int a;        \n"
            "char* s = \"      \";     \n"
            "      int n = 1'000; char c = '  ';\n"
            "auto r = R\"       \";\n");
  EXPECT_EQ(blank_comments(source, true),
            "int a;        \n"
            "char* s = \"x//y\\\"\";     \n"
            "      int n = 1'000; char c = '\\'';\n"
            "auto r = R\"(a \" b)\";\n");
}

}  // namespace
}  // namespace ak
