// results.tsv: one row per experiment, appended by the tool only (under an exclusive file lock,
// so parallel runs never interleave half rows).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/evaluate.h"

namespace ak {

struct ResultRow {
  ResultRow(std::string command_, std::string kernel_, std::string config_, std::string device_,
            const ExperimentRequest* request_, const ExperimentResult* result_)
      : command(std::move(command_)),
        kernel(std::move(kernel_)),
        config(std::move(config_)),
        device(std::move(device_)),
        request(request_),
        result(result_) {}

  std::string command;  // bench, tune, optimize
  std::string kernel;   // the source file
  std::string config;   // "THREADS=256 VEC=8", or "" for the file's defaults
  std::string device;
  const ExperimentRequest* request = nullptr;
  const ExperimentResult* result = nullptr;
  // Set by the loop (optimize); empty or zero for bench and tune.
  int experiment = 0;    // the run's experiment number, from 1
  std::string name;      // the plan's kernel name
  std::string decision;  // baseline, kept, reverted, failed
  std::string commit;    // the commit a kept experiment made
  double elapsed_s = 0;  // seconds since the run started, when the experiment finished
  std::string worker;    // the worker that measured the row's figure ("gpu1", "node-b/gpu0")
  // A would-be keep timed again beside the best, on the same worker: the best's new figure, then
  // the candidate's second (0 when there was none).
  double best_again_us = 0;
  double again_us = 0;
};

// One row of results.tsv read back: column name -> text.
using ResultRecord = std::map<std::string, std::string>;

void append_result(const std::filesystem::path& tsv, const ResultRow& row);
// Every row of the file, in order (none when it does not exist). A torn last line (a crash in
// the middle of a write) is skipped. Throws Error(Io) when the file cannot be read.
std::vector<ResultRecord> read_results(const std::filesystem::path& tsv);
// The header line, for readers and tests.
std::string results_header();

}  // namespace ak
