// workspace/profile.json, written by the bridge (python/autokernel/profile.py): the model and how
// it was run, and one entry per operator-problem-dtype (or unknown aten op) with its time per
// forward pass. Read here so the C++ side can rank, plan and extract.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace ak {

struct ProfileEntry {
  std::optional<std::string> op;  // one of our operators, or none (an unknown aten op)
  std::string problem;            // with op: the engine's problem string
  std::string dtype;              // with op
  std::string aten;               // without op: the outermost aten op, e.g. "aten::embedding"
  double us = 0;                  // time per forward pass
  double calls = 0;               // calls per forward pass
};

// Where the bridge found one of our operators in the model's traced graph.
struct ProfileSite {
  std::string path;  // the traced module ("" for the whole model)
  std::string op, problem, dtype;
  std::string label;  // the spelling found: "rmsnorm written out", "rotary (rotate-half)", ...
};

struct ProfiledModel {
  std::string spec;  // "llama" or "path/to/file.py:Class"
  std::vector<int64_t> input_shape;
  std::string dtype;
  int64_t seed = 0;

  // The file of a "path/to/file.py:Class" spec, as written; "" for a shipped model's name.
  std::string file() const;
  // The spec with a relative file made absolute against `base`: what a process running elsewhere
  // (the judge's, in directories of its own) must be given to find the file the user named.
  std::string spec_from(const std::filesystem::path& base) const;
};

struct Profile {
  ProfiledModel model;
  std::string device_type;  // "cuda" or "cpu"
  std::string device_name;
  std::string time_kind;  // "gpu kernel time" or "cpu op time"
  double total_us = 0;    // the entries' sum
  double wall_us = 0;     // one forward pass, end to end
  std::vector<ProfileEntry> entries;
  std::vector<ProfileSite> sites;  // the operators found in the graph
  std::vector<std::string> notes;  // what did not trace, or was recognised with no operator of ours
  std::string shipped_from;        // a shipped profile's file, "" for one measured here

  Backend backend() const { return device_type == "cuda" ? Backend::Cuda : Backend::Host; }
  // A name for branches and plans: the shipped model's name, or the user's class name.
  std::string short_name() const;
};

inline constexpr const char* kProfileFile = "profile.json";

// Throws Error(Usage) when there is no profile in the workspace or it is not one.
Profile read_profile(const std::filesystem::path& workspace);

// A profile document by its path (a shipped one). Throws Error(Usage) when it is not one.
Profile read_profile_file(const std::filesystem::path& file);

}  // namespace ak
