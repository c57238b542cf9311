// A kernel's tuning space, declared in its own comments:
//
//   // @tune BLOCK_ROWS: 1, 2, 4, 8
//   // @tune THREADS: 128, 256, 512
//   // @require THREADS * VEC <= N
//
// (`# @tune` in Python/Triton files). A choice of one value per parameter (a Config) reaches the
// kernel as -DNAME=VALUE definitions, so a Config is exactly a compiler Defines list.
// @require lines are muparser expressions over the tune parameters and the problem's symbols
// (the op's dim names and params); a configuration is feasible when every one is non-zero.
// Besides muparser's operators (+ - * / ^ < <= == != && || ?:) they may use `%` (fmod) and `!`.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ak {

class Op;
struct Problem;

struct TuneParam {
  std::string name;
  std::vector<std::string> values;  // integers or identifiers, in declaration order
};

struct TuneSpace {
  std::vector<TuneParam> params;
  std::vector<std::string> requires_;  // expressions, in declaration order

  // Number of points before any @require: the product of the value counts (1 for no params),
  // saturating at SIZE_MAX.
  size_t size() const;
};

// One value per parameter, ordered like TuneSpace::params.
using Config = std::vector<std::pair<std::string, std::string>>;

// The cap a caller passes to feasible_configs unless it has a reason to differ: the feasible
// configurations of one problem, after @require (the lists' product may be larger: the
// enumeration prunes by each @require as soon as its parameters are bound).
inline constexpr size_t kMaxTuneConfigs = 250000;

// "THREADS=256 VEC=8" (empty for an empty config).
std::string to_string(const Config& config);

// Reads to_string's form back (whitespace- or comma-separated NAME=VALUE). Every parameter of
// the space must appear exactly once. Throws Error(Usage) on an unknown name, a value the space
// does not list, a missing or repeated parameter, or a malformed item.
Config parse_config(std::string_view text, const TuneSpace& space);

// Reads the @tune and @require lines of a kernel source. Throws Error(Usage) naming the line
// for a malformed directive, a duplicate parameter or value, an empty value list, or a
// @require muparser cannot parse.
TuneSpace parse_tune_space(std::string_view source);

// Whether `config` meets every @require, given the problem's symbols. Throws Error(Usage) when
// a @require names something that is neither a parameter nor a symbol, uses a parameter whose
// value in `config` is not a number, or uses a parameter that `config` lacks.
bool satisfies(const TuneSpace& space, const Config& config, const std::map<std::string, double>& symbols);

// Every configuration that satisfies the @requires, in the cartesian product's order (declaration
// order, the first parameter varying slowest). An empty space gives one empty Config. Enumerated
// depth first, each @require tested as soon as the last parameter it uses is bound, so a prefix
// that fails one is not extended. Throws Error(Usage) when more than `limit` configurations are
// feasible, or when more than 16 x `limit` prefixes must be tried to find them.
std::vector<Config> feasible_configs(const TuneSpace& space, const std::map<std::string, double>& symbols,
                                     size_t limit);

// The file's own defaults (`#define NAME VALUE` for every @tune parameter, or in a Triton file a
// module-level `NAME = VALUE`) as a configuration of the space, when each is a value the space
// lists; nullopt otherwise.
std::optional<Config> default_config(std::string_view source, const TuneSpace& space);

// The symbols a @require may use for this problem: the op's dim names bound to the problem's
// dims, and the op's parameters (defaults overridden by the problem's own). Throws Error(Usage)
// when the problem's rank differs from the op's.
std::map<std::string, double> problem_symbols(const Op& op, const Problem& problem);

}  // namespace ak
