#include "harness/checks.h"

#include <chrono>
#include <thread>

#include "harness/compare.h"

namespace ak {
namespace {

// Copies of the tensors in the judge's own memory, to compare later contents against.
std::vector<std::unique_ptr<Buffer>> snapshot(Runtime& runtime,
                                              const std::vector<std::unique_ptr<GuardedTensor>>& tensors) {
  std::vector<std::unique_ptr<Buffer>> copies;
  for (const auto& t : tensors) {
    copies.push_back(runtime.allocate(t->spec().bytes()));
    runtime.copy(copies.back()->data(), t->data(), t->spec().bytes());
  }
  return copies;
}

// Catches work done outside call->stream. On an asynchronous device the launcher holds the
// kernel stream shut while ak_launch enqueues: an output that no longer holds its poison
// (load_case wrote it) before the stream opens was written by work on another stream (or
// synchronously); work on another stream starts within microseconds of its launch, so a few
// milliseconds show it. On the host, where a launch runs to completion, the outputs must not
// change after ak_launch has returned (work left running in the background).
std::string launch_confined(const CheckContext& ctx, KernelArgs& args) {
  using namespace std::chrono_literals;
  Launcher& launcher = ctx.launcher;
  const int id = args.launch_id(launcher);
  if (launcher.asynchronous()) {
    launcher.hold(id);
    std::this_thread::sleep_for(5ms);
    std::string violation;
    for (size_t i = 0; i < args.outputs.size() && violation.empty(); ++i)
      if (!args.outputs[i]->still_poisoned())
        violation =
            args.outputs[i]->spec().name + " changed before the given stream ran: work outside call->stream";
    launcher.release();
    return violation;
  }
  launcher.run({id});
  const auto before = snapshot(ctx.runtime, args.outputs);
  std::this_thread::sleep_for(20ms);
  for (size_t i = 0; i < args.outputs.size(); ++i)
    if (ctx.runtime.first_difference(args.outputs[i]->data(), before[i]->data(),
                                     args.outputs[i]->spec().bytes()) >= 0)
      return args.outputs[i]->spec().name +
             " changed after ak_launch returned: work left running in the background";
  return "";
}

std::string describe_case(const CaseSpec& spec, int input_set) {
  return spec.problem.to_string() + " " + std::string(to_string(spec.dtype)) + " " + spec.input_case +
         " set " + std::to_string(input_set);
}

}  // namespace

KernelArgs::KernelArgs(Runtime& runtime, ArenaAllocator& arena, const Signature& signature)
    : scalars(signature.scalars) {
  for (const auto& spec : signature.inputs)
    inputs.push_back(std::make_unique<GuardedTensor>(runtime, arena, spec));
  for (const auto& spec : signature.outputs)
    outputs.push_back(std::make_unique<GuardedTensor>(runtime, arena, spec));
  if (signature.workspace) workspace = std::make_unique<GuardedTensor>(runtime, arena, *signature.workspace);
}

CallLayout KernelArgs::layout() const {
  CallLayout call;
  for (const auto& t : inputs) call.inputs.push_back({t->arena_offset(), t->spec()});
  for (const auto& t : outputs) call.outputs.push_back({t->arena_offset(), t->spec()});
  call.scalars = scalars;
  if (workspace) call.workspace = CallLayout::Tensor{workspace->arena_offset(), workspace->spec()};
  return call;
}

void KernelArgs::poison() {
  for (auto& out : outputs) out->poison();
  if (workspace) workspace->poison();
}

std::string KernelArgs::broken_guard() const {
  for (const auto* group : {&inputs, &outputs})
    for (const auto& t : *group)
      if (std::string bad = t->check_guards(); !bad.empty()) return bad;
  return workspace ? workspace->check_guards() : "";
}

int KernelArgs::launch_id(Launcher& launcher) {
  if (!id_) id_ = launcher.define(layout());
  return *id_;
}

size_t arena_bytes_of(const Signature& signature) {
  const auto footprint = [](const TensorSpec& spec) {
    return (spec.bytes() + 2 * kGuardBytes + ArenaAllocator::kAlignment - 1) / ArenaAllocator::kAlignment *
           ArenaAllocator::kAlignment;
  };
  size_t total = signature.workspace ? footprint(*signature.workspace) : 0;
  for (const auto* group : {&signature.inputs, &signature.outputs})
    for (const auto& spec : *group) total += footprint(spec);
  return total;
}

void launch_kernel(const CheckContext& ctx, KernelArgs& args) {
  ctx.launcher.run({args.launch_id(ctx.launcher)});
}

void load_case(const CheckContext& ctx, KernelArgs& args, const DeviceCase& device) {
  for (size_t i = 0; i < args.inputs.size(); ++i)
    ctx.runtime.copy(args.inputs[i]->data(), device.inputs[i]->data(), args.inputs[i]->spec().bytes());
  args.poison();
}

CheckOutcome verify_case(const CheckContext& ctx, const KernelArgs& args, const PreparedCase& prepared,
                         const DeviceCase& device) {
  CheckOutcome outcome;
  auto fail = [&](std::string reason) {
    outcome.ok = false;
    outcome.reason = std::move(reason);
    return outcome;
  };
  if (std::string bad = args.broken_guard(); !bad.empty()) return fail(bad);
  for (size_t i = 0; i < args.inputs.size(); ++i)
    if (ctx.runtime.first_difference(args.inputs[i]->data(), device.inputs[i]->data(),
                                     args.inputs[i]->spec().bytes()) >= 0)
      return fail("input " + args.inputs[i]->spec().name + " was modified");
  // The problem's dtype (every op's first input) sets the tolerance, also for fp32 outputs.
  const Tolerance tol = ctx.op.tolerance(args.inputs.front()->spec().dtype);
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const Comparison c = compare_output(ctx.runtime, args.outputs[i]->data(), prepared, device, i, tol);
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
    auto device = ctx.cases.get(prepared);
    if (!args) args = std::make_unique<KernelArgs>(ctx.runtime, ctx.arena, prepared->signature);
    load_case(ctx, *args, *device);
    if (set == 0) {
      if (std::string violation = launch_confined(ctx, *args); !violation.empty())
        return {false, violation + " (" + describe_case(spec, set) + ")", 0};
    } else {
      launch_kernel(ctx, *args);
    }
    CheckOutcome outcome = verify_case(ctx, *args, *prepared, *device);
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
  auto device = ctx.cases.get(prepared);
  KernelArgs args(ctx.runtime, ctx.arena, prepared->signature);
  std::vector<std::unique_ptr<Buffer>> first;
  for (int run = 0; run < repeats; ++run) {
    load_case(ctx, args, *device);
    launch_kernel(ctx, args);
    if (run == 0) {
      first = snapshot(ctx.runtime, args.outputs);
      continue;
    }
    for (size_t i = 0; i < args.outputs.size(); ++i)
      if (ctx.runtime.first_difference(args.outputs[i]->data(), first[i]->data(),
                                       args.outputs[i]->spec().bytes()) >= 0)
        return {false,
                args.outputs[i]->spec().name + " differs bitwise between run 1 and run " +
                    std::to_string(run + 1) + " on the same inputs (" + describe_case(spec, 0) + ")",
                0};
  }
  return {};
}

}  // namespace ak
