#include "harness/launch_server.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/subprocess.h"
#include "core/tensor.h"
#include "harness/sandbox.h"
#include "runtime/module.h"

namespace ak {
namespace {

constexpr int kChannel = 3;
// The kernel's own output (printf, the sandbox's report) goes to a log the judge reads for a
// crash's reason; capped so that a kernel cannot fill memory with it.
constexpr rlim_t kLogLimit = 1 << 20;

class Server {
 public:
  explicit Server(const LaunchServerOptions& o) : device_(make_launch_device(o.backend, o.device)) {
    base_ = device_->attach(o.arena, o.arena_bytes);
    bytes_ = o.arena_bytes;
    device_->prepare_for_sandbox();
  }

  // One request; false when the process must end (a device fault poisons the context).
  bool handle(const std::string& line) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "load") return load(line.substr(5));
    if (verb == "define") return define(in);
    if (verb == "run") return run(in);
    if (verb == "hold") return hold(in);
    if (verb == "release") {
      device_->release_stream();
      return finish();
    }
    return reply("error protocol: unknown request '" + verb + "'");
  }

 private:
  bool reply(const std::string& text) { return write_line(kChannel, text); }

  bool load(const std::string& path) {
    try {
      module_ = std::make_unique<KernelModule>(path);
    } catch (const Error& e) {
      return reply(std::string("error ") + (e.kind() == ErrorKind::Io ? "io " : "validation ") + e.what());
    }
    enter_sandbox(SandboxPhase::Run);
    if (const ak_prepare_fn prepare = module_->prepare()) {
      if (const int rc = prepare(); rc != AK_OK)
        return reply("error validation ak_prepare returned " + std::to_string(rc));
      if (!finish(false)) return false;
    }
    return reply("loaded");
  }

  bool define(std::istringstream& in) {
    int id = 0;
    in >> id;
    std::string json;
    std::getline(in, json);
    const auto j = nlohmann::json::parse(json);
    ak_call call{};
    call.abi_version = AK_ABI_VERSION;
    // [offset, dtype code, shape, swapped axis]: its spec and where it lies in the arena.
    auto tensor = [&](const nlohmann::json& t) {
      const auto offset = t[0].get<size_t>();
      const int code = t[1].get<int>();
      if (code < AK_F32 || code > AK_I64) throw Error(ErrorKind::Internal, "define: dtype code out of range");
      TensorSpec spec{"", static_cast<DType>(code), t[2].get<std::vector<int64_t>>(),
                      t.size() > 3 ? t[3].get<int>() : -1};
      if (offset + spec.bytes() > bytes_)
        throw Error(ErrorKind::Internal, "define: a tensor outside the arena");
      return std::pair{spec, base_ + offset};
    };
    auto tensors = [&](const nlohmann::json& list, ak_tensor* out, int32_t& count) {
      count = static_cast<int32_t>(list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        const auto [spec, data] = tensor(list[i]);
        out[i] = make_abi_tensor(spec, data);
      }
    };
    tensors(j.at("inputs"), call.inputs, call.n_inputs);
    tensors(j.at("outputs"), call.outputs, call.n_outputs);
    const auto scalars = j.at("scalars").get<std::vector<double>>();
    call.n_scalars = static_cast<int32_t>(scalars.size());
    for (size_t i = 0; i < scalars.size(); ++i) call.scalars[i] = scalars[i];
    call.stream = device_->stream();
    if (j.contains("workspace")) {
      const auto [spec, data] = tensor(j["workspace"]);
      call.workspace = data;
      call.workspace_bytes = static_cast<int64_t>(spec.bytes());
    }
    calls_[id] = call;
    return true;  // no reply: a definition travels ahead of the run that uses it
  }

  int launch(int id) {
    if (!module_) throw Error(ErrorKind::Internal, "run before load");
    return module_->launch()(&calls_.at(id));
  }

  // "run ID ID ...": the calls in order; "nothing" in place of an id is the runtime's own
  // empty launch (the judge's measure of an empty batch).
  bool run(std::istringstream& in) {
    int index = 0;
    device_->mark_batch_start();
    for (std::string token; in >> token; ++index) {
      if (token == "nothing") {
        device_->launch_nothing();
        continue;
      }
      if (const int rc = launch(std::stoi(token)); rc != 0) {
        finish(false);
        return reply("rc " + std::to_string(rc) + " " + std::to_string(index));
      }
    }
    device_->mark_batch_end();
    return finish(true, true);
  }

  bool hold(std::istringstream& in) {
    int id = 0;
    in >> id;
    device_->hold_stream();
    const int rc = launch(id);
    if (rc != 0) {
      device_->release_stream();
      finish(false);
      return reply("rc " + std::to_string(rc) + " 0");
    }
    return reply("enqueued");
  }

  // Waits for the stream; "done" (after a batch, with its device time by the launcher's events
  // when there is one), or "fault ..." and the end of this process.
  bool finish(bool answer = true, bool batch = false) {
    try {
      device_->synchronize();
    } catch (const Error& e) {
      reply(std::string("fault ") + e.what());
      return false;
    }
    if (!answer) return true;
    const double device_us = batch ? device_->batch_device_us() : -1;
    return reply(device_us >= 0 ? "done " + std::to_string(device_us) : std::string("done"));
  }

  std::unique_ptr<LaunchDevice> device_;
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  std::unique_ptr<KernelModule> module_;
  std::unordered_map<int, ak_call> calls_;
};

// Dies with the judge (a judge killed by its time limit takes this process along), never leaves
// a core file, and caps what the kernel's output can grow to.
void limit_this_process() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const rlimit log_limit{kLogLimit, kLogLimit}, no_core{0, 0};
  ::setrlimit(RLIMIT_FSIZE, &log_limit);
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(SIGXFSZ, SIG_IGN);
}

// A launcher started by root would still hold CAP_SYS_PTRACE, which opens even a non-dumpable
// judge's memory (/proc/PID/mem): it gives up every capability before any kernel code runs.
void drop_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  if (::syscall(SYS_capset, &header, none) != 0)
    throw Error(ErrorKind::Internal, std::string("capset: ") + std::strerror(errno));
}

}  // namespace

int serve_launches(const LaunchServerOptions& options) {
  limit_this_process();
  if (::getppid() == 1) return 1;  // the judge is already gone
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(options);
    drop_capabilities();
    enter_sandbox(SandboxPhase::Load);
  } catch (const std::exception& e) {
    write_line(kChannel, std::string("error setup ") + e.what());
    return 1;
  }
  if (!write_line(kChannel, "ready")) return 1;
  LineReader requests(kChannel);
  // On a GPU the judge's clock runs from its request to the launches: answer at once. (On the
  // host the launches themselves need the cores.)
  requests.set_spin(options.backend == Backend::Cuda);
  std::string line;
  while (requests.next(line) == LineRead::Line) {
    try {
      if (!server->handle(line)) return 3;
    } catch (const std::exception& e) {
      if (!write_line(kChannel, std::string("error ") + e.what())) return 1;
    }
  }
  return 0;
}

}  // namespace ak
