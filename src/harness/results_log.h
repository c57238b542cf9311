// results.tsv: one row per experiment, appended by the tool only (under an exclusive file lock,
// so parallel runs never interleave half rows).
#pragma once

#include <filesystem>
#include <string>

#include "harness/evaluate.h"

namespace ak {

struct ResultRow {
  std::string command;  // bench, tune, optimize
  std::string kernel;   // the source file
  std::string config;   // "THREADS=256 VEC=8", or "" for the file's defaults
  std::string device;
  const ExperimentRequest* request = nullptr;
  const ExperimentResult* result = nullptr;
};

void append_result(const std::filesystem::path& tsv, const ResultRow& row);
// The header line, for readers and tests.
std::string results_header();

}  // namespace ak
