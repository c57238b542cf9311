#include "harness/result.h"

#include "core/error.h"

namespace ak {
namespace {

constexpr std::pair<Status, std::string_view> kStatusNames[] = {
    {Status::Pass, "PASS"},      {Status::Fail, "FAIL"},       {Status::CompileError, "COMPILE_ERROR"},
    {Status::LintError, "LINT"}, {Status::Timeout, "TIMEOUT"}, {Status::Crash, "CRASH"},
    {Status::Error, "ERROR"}};

}  // namespace

std::string_view to_string(Status s) {
  for (const auto& [status, name] : kStatusNames)
    if (status == s) return name;
  return "ERROR";
}

Status parse_status(std::string_view text) {
  for (const auto& [status, name] : kStatusNames)
    if (name == text) return status;
  throw Error(ErrorKind::Validation, "unknown status '" + std::string(text) + "'");
}

void to_json(nlohmann::json& j, const StageReport& r) {
  j = {{"stage", r.stage},
       {"checks", r.checks},
       {"passed", r.passed},
       {"worst_norm_error", r.worst_norm_error},
       {"seconds", r.seconds}};
}
void from_json(const nlohmann::json& j, StageReport& r) {
  r.stage = j.at("stage");
  r.checks = j.at("checks");
  r.passed = j.at("passed");
  r.worst_norm_error = j.at("worst_norm_error");
  r.seconds = j.at("seconds");
}

void to_json(nlohmann::json& j, const TimingReport& r) {
  j = {{"median_us", r.median_us}, {"noise", r.noise},   {"samples", r.samples},
       {"min_us", r.min_us},       {"max_us", r.max_us}, {"seconds", r.seconds}};
}
void from_json(const nlohmann::json& j, TimingReport& r) {
  r.median_us = j.at("median_us");
  r.noise = j.at("noise");
  r.samples = j.at("samples");
  r.min_us = j.at("min_us");
  r.max_us = j.at("max_us");
  r.seconds = j.at("seconds");
}

void to_json(nlohmann::json& j, const ExperimentResult& r) {
  j = {{"status", to_string(r.status)},
       {"stage", r.stage},
       {"reason", r.reason},
       {"stages", r.stages},
       {"timing", r.timing},
       {"flops", r.flops},
       {"bytes", r.bytes},
       {"gbps", r.gbps},
       {"tflops", r.tflops},
       {"roofline", r.roofline},
       {"compile_seconds", r.compile_seconds},
       {"compile_cached", r.compile_cached},
       {"total_seconds", r.total_seconds}};
}

void from_json(const nlohmann::json& j, ExperimentResult& r) {
  r.status = parse_status(j.at("status").get<std::string>());
  r.stage = j.at("stage");
  r.reason = j.at("reason");
  r.stages = j.at("stages").get<std::vector<StageReport>>();
  r.timing = j.at("timing").get<TimingReport>();
  r.flops = j.at("flops");
  r.bytes = j.at("bytes");
  r.gbps = j.at("gbps");
  r.tflops = j.at("tflops");
  r.roofline = j.at("roofline");
  r.compile_seconds = j.value("compile_seconds", 0.0);
  r.compile_cached = j.value("compile_cached", false);
  r.total_seconds = j.value("total_seconds", 0.0);
}

}  // namespace ak
