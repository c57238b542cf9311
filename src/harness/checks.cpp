#include "harness/checks.h"

#include <chrono>
#include <thread>

#include "core/error.h"
#include "harness/compare.h"

namespace ak {
namespace {

// Catches work done outside call->stream. On an asynchronous device the kernel stream is held
// shut while ak_launch enqueues: any output that changes before it opens was written by work on
// another stream (or synchronously). On the host, where a launch runs to completion, the outputs
// must not change after ak_launch has returned (work left running on a thread).
// Catches work done outside call->stream. On an asynchronous device the kernel stream is held
// shut while ak_launch enqueues: an output that no longer holds its poison (load_case wrote it)
// before the stream opens was written by work on another stream (or synchronously); work on
// another stream starts within microseconds of its launch, so a few milliseconds show it. On the
// host, where a launch runs to completion, the outputs must not change after ak_launch has
// returned (work left running on a thread).
std::string launch_confined(const CheckContext& ctx, const KernelArgs& args) {
  using namespace std::chrono_literals;
  Runtime& rt = ctx.runtime;
  if (rt.asynchronous()) {
    rt.hold_stream();
    try {
      launch_kernel(ctx, args);
    } catch (...) {
      rt.release_stream();
      throw;
    }
    std::this_thread::sleep_for(5ms);
    std::string violation;
    for (size_t i = 0; i < args.outputs.size() && violation.empty(); ++i)
      if (!args.outputs[i]->still_poisoned())
        violation =
            args.outputs[i]->spec().name + " changed before the given stream ran: work outside call->stream";
    rt.release_stream();
    rt.synchronize();
    return violation;
  }
  std::vector<std::vector<std::byte>> before;
  launch_kernel(ctx, args);
  for (const auto& out : args.outputs) before.push_back(out->download());
  std::this_thread::sleep_for(20ms);
  for (size_t i = 0; i < args.outputs.size(); ++i)
    if (args.outputs[i]->download() != before[i])
      return args.outputs[i]->spec().name +
             " changed after ak_launch returned: work left running in the background";
  return "";
}

std::string describe_case(const CaseSpec& spec, int input_set) {
  return spec.problem.to_string() + " " + std::string(to_string(spec.dtype)) + " " + spec.input_case +
         " set " + std::to_string(input_set);
}

}  // namespace

KernelArgs::KernelArgs(Runtime& runtime, const Signature& signature) : scalars(signature.scalars) {
  for (const auto& spec : signature.inputs) inputs.push_back(std::make_unique<GuardedTensor>(runtime, spec));
  for (const auto& spec : signature.outputs)
    outputs.push_back(std::make_unique<GuardedTensor>(runtime, spec));
}

ak_call KernelArgs::make_call(void* stream) const {
  ak_call call{};
  call.abi_version = AK_ABI_VERSION;
  call.n_inputs = static_cast<int32_t>(inputs.size());
  call.n_outputs = static_cast<int32_t>(outputs.size());
  call.n_scalars = static_cast<int32_t>(scalars.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    call.inputs[i] = make_abi_tensor(inputs[i]->spec(), inputs[i]->data());
  for (size_t i = 0; i < outputs.size(); ++i)
    call.outputs[i] = make_abi_tensor(outputs[i]->spec(), outputs[i]->data());
  for (size_t i = 0; i < scalars.size(); ++i) call.scalars[i] = scalars[i];
  call.stream = stream;
  return call;
}

void launch_kernel(const CheckContext& ctx, const KernelArgs& args) {
  const ak_call call = args.make_call(ctx.runtime.stream());
  const int rc = ctx.launch(&call);
  if (rc != AK_OK)
    throw Error(ErrorKind::Launch, "ak_launch returned " + std::to_string(rc) +
                                       (rc == AK_ERR_UNSUPPORTED ? " (unsupported)"
                                        : rc == AK_ERR_LAUNCH    ? " (launch failed)"
                                                                 : ""));
}

void load_case(KernelArgs& args, const PreparedCase& prepared) {
  for (size_t i = 0; i < args.inputs.size(); ++i) args.inputs[i]->upload(prepared.input_bytes[i]);
  for (auto& out : args.outputs) out->poison();
}

CheckOutcome verify_case(const CheckContext& ctx, const KernelArgs& args, const PreparedCase& prepared) {
  CheckOutcome outcome;
  auto fail = [&](std::string reason) {
    outcome.ok = false;
    outcome.reason = std::move(reason);
    return outcome;
  };
  for (const auto* group : {&args.inputs, &args.outputs})
    for (const auto& t : *group)
      if (std::string bad = t->check_guards(); !bad.empty()) return fail(bad);
  for (size_t i = 0; i < args.inputs.size(); ++i)
    if (args.inputs[i]->download() != prepared.input_bytes[i])
      return fail("input " + args.inputs[i]->spec().name + " was modified");
  // The problem's dtype (every op's first input) sets the tolerance, also for fp32 outputs.
  const Tolerance tol = ctx.op.tolerance(args.inputs.front()->spec().dtype);
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const Comparison c = compare_output(args.outputs[i]->spec(), args.outputs[i]->download(),
                                        prepared.reference[i], tol, prepared.rows);
    outcome.worst_norm_error = std::max(outcome.worst_norm_error, c.norm_error / tol.norm_rtol);
    if (!c.ok) return fail(c.reason);
  }
  return outcome;
}

CaseSpec input_set(const CaseSpec& check, int set) {
  CaseSpec drawn = check;
  drawn.seed += static_cast<uint64_t>(set);
  return drawn;
}

CheckOutcome run_check(const CheckContext& ctx, const CaseSpec& spec) {
  CheckOutcome total;
  std::unique_ptr<KernelArgs> args;
  for (int set = 0; set < kInputSetsPerCheck; ++set) {
    auto prepared = prepare_case(ctx.op, input_set(spec, set));
    if (!args) args = std::make_unique<KernelArgs>(ctx.runtime, prepared->signature);
    load_case(*args, *prepared);
    if (set == 0) {
      if (std::string violation = launch_confined(ctx, *args); !violation.empty())
        return {false, violation + " (" + describe_case(spec, set) + ")", 0};
    } else {
      launch_kernel(ctx, *args);
      ctx.runtime.synchronize();
    }
    CheckOutcome outcome = verify_case(ctx, *args, *prepared);
    if (!outcome.ok) {
      outcome.reason += " (" + describe_case(spec, set) + ")";
      return outcome;
    }
    total.worst_norm_error = std::max(total.worst_norm_error, outcome.worst_norm_error);
  }
  return total;
}

CheckOutcome run_determinism(const CheckContext& ctx, const CaseSpec& spec, int repeats) {
  auto prepared = prepare_case(ctx.op, input_set(spec, 0));
  KernelArgs args(ctx.runtime, prepared->signature);
  std::vector<std::vector<std::byte>> first;
  for (int run = 0; run < repeats; ++run) {
    load_case(args, *prepared);
    launch_kernel(ctx, args);
    ctx.runtime.synchronize();
    for (size_t i = 0; i < args.outputs.size(); ++i) {
      auto bytes = args.outputs[i]->download();
      if (run == 0) {
        first.push_back(std::move(bytes));
      } else if (bytes != first[i]) {
        return {false,
                args.outputs[i]->spec().name + " differs bitwise between run 1 and run " +
                    std::to_string(run + 1) + " on the same inputs (" + describe_case(spec, 0) + ")",
                0};
      }
    }
  }
  return {};
}

}  // namespace ak
