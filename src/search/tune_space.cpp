#include "search/tune_space.h"

#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <regex>

#include "core/error.h"
#include "core/op.h"
#include "core/problem.h"

namespace ak {
namespace {

[[noreturn]] void usage(const std::string& message) {
  throw Error(ErrorKind::Usage, message);
}

[[noreturn]] void line_error(int line, const std::string& message) {
  usage("tune space line " + std::to_string(line) + ": " + message);
}

// "a, b, c", or "none" for an empty range; `name` picks the string out of each element.
template <typename Range, typename Name>
std::string join(const Range& range, Name name) {
  std::string out;
  for (const auto& element : range) out += (out.empty() ? "" : ", ") + std::string(name(element));
  return out.empty() ? "none" : out;
}

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Values end up on a compiler command line, so only characters that need no quoting pass.
bool is_plain_value(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '+' && c != '-')
      return false;
  return true;
}

std::optional<double> as_number(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars takes no leading '+'
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

double fmod_operator(double a, double b) {
  return std::fmod(a, b);
}
double not_operator(double a) {
  return a == 0 ? 1 : 0;
}

// A muparser parser with the two operators kernel authors reach for that it lacks by default.
std::unique_ptr<mu::Parser> make_parser(const std::string& expression) {
  auto parser = std::make_unique<mu::Parser>();
  parser->DefineOprt("%", fmod_operator, mu::prMUL_DIV);
  parser->DefineInfixOprt("!", not_operator);
  parser->SetExpr(expression);
  return parser;
}

// The names an expression uses; throws muparser's error when it does not parse. muparser only
// parses on first use, and GetUsedVar parses while tolerating names not defined yet.
std::vector<std::string> used_names(mu::Parser& parser) {
  std::vector<std::string> names;
  for (const auto& [name, ptr] : parser.GetUsedVar()) names.push_back(name);
  return names;
}

const TuneParam* find_param(const TuneSpace& space, std::string_view name) {
  for (const auto& p : space.params)
    if (p.name == name) return &p;
  return nullptr;
}

void parse_tune_line(std::string_view body, int line, TuneSpace& space,
                     std::map<std::string, int>& declared) {
  const size_t colon = body.find(':');
  if (colon == std::string_view::npos) line_error(line, "expected '@tune NAME: v1, v2, ...'");
  const std::string name(trim(body.substr(0, colon)));
  if (!is_identifier(name)) line_error(line, "'" + name + "' is not a parameter name");
  if (auto it = declared.find(name); it != declared.end())
    line_error(
        line, "duplicate parameter " + name + " (first declared on line " + std::to_string(it->second) + ")");
  declared[name] = line;

  TuneParam param{name, {}};
  const std::string_view list = trim(body.substr(colon + 1));
  if (list.empty()) line_error(line, "@tune " + name + " has no values");
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string value(trim(list.substr(start, comma - start)));
    if (!is_plain_value(value))
      line_error(line, "@tune " + name + ": '" + value + "' is not a value (integers or identifiers)");
    for (const auto& seen : param.values)
      if (seen == value) line_error(line, "@tune " + name + ": duplicate value " + value);
    param.values.push_back(value);
    start = comma + 1;
  }
  space.params.push_back(std::move(param));
}

// Parses now rather than at the first evaluation, so a typo names its line. Problem symbols are
// not known yet; any name muparser does not know is taken to be one.
void validate_require(const TuneSpace& space, const std::string& expression, int line) {
  std::vector<double> dummies(space.params.size(), 1.0);
  try {
    auto parser = make_parser(expression);
    for (size_t i = 0; i < space.params.size(); ++i) parser->DefineVar(space.params[i].name, &dummies[i]);
    for (const auto& name : used_names(*parser)) {
      const TuneParam* param = find_param(space, name);
      if (!param) continue;
      for (const auto& value : param->values)
        if (!as_number(value))
          line_error(line, "@require uses " + name + ", whose value " + value + " is not a number");
    }
  } catch (const mu::Parser::exception_type& e) {
    line_error(line, "@require '" + expression + "': " + e.GetMsg());
  }
}

// Compiles every @require once against slots for the parameters and symbols, so testing a
// config is a few stores and bytecode evaluations (feasible_configs runs it up to 1e5 times).
class RequireEvaluator {
 public:
  RequireEvaluator(const TuneSpace& space, const std::map<std::string, double>& symbols)
      : symbols_(symbols), param_slots_(space.params.size()) {
    for (const auto& p : space.params) param_names_.push_back(p.name);
    for (const auto& expression : space.requires_) {
      try {
        parsers_.push_back(make_parser(expression));
        last_param_.push_back(-1);
        for (const auto& name : used_names(*parsers_.back())) bind(*parsers_.back(), expression, name);
      } catch (const mu::Parser::exception_type& e) {
        usage("@require '" + expression + "': " + e.GetMsg());
      }
    }
  }

  bool operator()(const Config& config) {
    for (const auto& [index, expression] : used_params_) load(config, index, expression);
    for (size_t r = 0; r < parsers_.size(); ++r)
      if (!holds(r)) return false;
    return true;
  }

  // Enumeration with pruning: set(index, value) binds one parameter, then holds_at(index) checks
  // the requires whose last parameter (in declaration order) is `index`, those over symbols alone
  // with index -1, so a prefix that already fails one is not extended.
  void set(size_t index, const std::string& value) {
    if (const auto used = used_params_.find(index); used != used_params_.end())
      param_slots_[index] = number_of(param_names_[index], value, used->second);
  }
  bool holds_at(int index) {
    for (size_t r = 0; r < parsers_.size(); ++r)
      if (last_param_[r] == index && !holds(r)) return false;
    return true;
  }

 private:
  // Require r on the values in the slots now.
  bool holds(size_t r) {
    try {
      return parsers_[r]->Eval() != 0;
    } catch (const mu::Parser::exception_type& e) {
      usage("@require '" + parsers_[r]->GetExpr() + "': " + e.GetMsg());
    }
  }

  void bind(mu::Parser& parser, const std::string& expression, const std::string& name) {
    const bool is_symbol = symbols_.count(name) > 0;
    for (size_t i = 0; i < param_names_.size(); ++i) {
      if (param_names_[i] != name) continue;
      if (is_symbol)
        usage("@require '" + expression + "': tune parameter " + name + " shadows a problem symbol");
      parser.DefineVar(name, &param_slots_[i]);
      used_params_.emplace(i, expression);
      last_param_.back() = std::max(last_param_.back(), static_cast<int>(i));
      return;
    }
    if (!is_symbol) {
      usage("@require '" + expression + "': unknown symbol " + name +
            " (neither a tune parameter nor a problem symbol: " +
            join(symbols_, [](const auto& entry) { return entry.first; }) + ")");
    }
    parser.DefineVar(name, &symbols_.at(name));
  }

  void load(const Config& config, size_t index, const std::string& expression) {
    const std::string& name = param_names_[index];
    // A config is ordered like the params, so the direct look-up nearly always hits.
    const auto* entry = index < config.size() && config[index].first == name ? &config[index] : nullptr;
    for (size_t i = 0; !entry && i < config.size(); ++i)
      if (config[i].first == name) entry = &config[i];
    if (!entry) usage("@require '" + expression + "': the configuration has no value for " + name);
    param_slots_[index] = number_of(name, entry->second, expression);
  }

  static double number_of(const std::string& name, const std::string& value, const std::string& expression) {
    const auto number = as_number(value);
    if (!number) usage("@require '" + expression + "': " + name + "=" + value + " is not a number");
    return *number;
  }

  std::vector<std::string> param_names_;
  std::map<std::string, double> symbols_;  // map nodes stay put: muparser holds their addresses
  std::vector<double> param_slots_;        // sized once, never resized, for the same reason
  std::vector<std::unique_ptr<mu::Parser>> parsers_;
  std::vector<int> last_param_;                // per parser: the last parameter it uses, -1 for none
  std::map<size_t, std::string> used_params_;  // param index -> an expression using it, for errors
};

// A comment line's directive body: "@tune ..." -> ("tune", "..."). Only lines whose comment
// starts with the directive count, so prose that mentions @tune elsewhere is left alone.
std::optional<std::pair<std::string_view, std::string_view>> directive(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("//") && !line.starts_with("#")) return std::nullopt;
  line.remove_prefix(std::min(line.find_first_not_of(line[0]), line.size()));
  line = trim(line);
  for (std::string_view word : {"@tune", "@require"}) {
    if (!line.starts_with(word)) continue;
    const std::string_view rest = line.substr(word.size());
    if (!rest.empty() && (std::isalnum(static_cast<unsigned char>(rest[0])) || rest[0] == '_')) continue;
    return std::pair{word.substr(1), trim(rest)};
  }
  return std::nullopt;
}

}  // namespace

size_t TuneSpace::size() const {
  size_t n = 1;
  for (const auto& p : params) {
    if (p.values.empty()) return 0;
    if (n > std::numeric_limits<size_t>::max() / p.values.size()) return std::numeric_limits<size_t>::max();
    n *= p.values.size();
  }
  return n;
}

std::string to_string(const Config& config) {
  std::string out;
  for (const auto& [name, value] : config) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

Config parse_config(std::string_view text, const TuneSpace& space) {
  std::map<std::string, std::string, std::less<>> chosen;
  size_t pos = 0;
  while ((pos = text.find_first_not_of(" \t\r\n,", pos)) != std::string_view::npos) {
    const size_t end = std::min(text.find_first_of(" \t\r\n,", pos), text.size());
    const std::string_view item = text.substr(pos, end - pos);
    pos = end;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) usage("config item '" + std::string(item) + "' is not NAME=VALUE");
    const std::string name(item.substr(0, eq)), value(item.substr(eq + 1));
    const TuneParam* param = find_param(space, name);
    if (!param) {
      usage("config names unknown parameter " + name +
            " (parameters: " + join(space.params, [](const TuneParam& p) { return p.name; }) + ")");
    }
    if (std::find(param->values.begin(), param->values.end(), value) == param->values.end()) {
      usage("config value " + name + "=" + value + " is not in the space (" + name + ": " +
            join(param->values, [](const std::string& v) { return v; }) + ")");
    }
    if (!chosen.emplace(name, value).second) usage("config sets " + name + " twice");
  }
  Config config;
  for (const auto& p : space.params) {
    auto it = chosen.find(p.name);
    if (it == chosen.end()) usage("config has no value for " + p.name);
    config.emplace_back(p.name, it->second);
  }
  return config;
}

TuneSpace parse_tune_space(std::string_view source) {
  TuneSpace space;
  std::map<std::string, int> declared;
  std::vector<std::pair<std::string, int>> requires_at;
  int line_number = 0;
  for (size_t pos = 0; pos <= source.size(); ++line_number) {
    const size_t end = std::min(source.find('\n', pos), source.size());
    const auto found = directive(source.substr(pos, end - pos));
    pos = end + 1;
    if (!found) continue;
    const auto [word, body] = *found;
    if (word == "tune") {
      parse_tune_line(body, line_number + 1, space, declared);
    } else if (body.empty()) {
      line_error(line_number + 1, "@require has no expression");
    } else {
      requires_at.emplace_back(body, line_number + 1);
    }
  }
  // Requires are checked after every @tune is known, so they may precede the @tunes they use.
  for (const auto& [expression, line] : requires_at) {
    validate_require(space, expression, line);
    space.requires_.push_back(expression);
  }
  return space;
}

bool satisfies(const TuneSpace& space, const Config& config, const std::map<std::string, double>& symbols) {
  RequireEvaluator evaluate(space, symbols);
  return evaluate(config);
}

std::vector<Config> feasible_configs(const TuneSpace& space, const std::map<std::string, double>& symbols,
                                     size_t limit) {
  for (const auto& p : space.params)
    if (p.values.empty()) return {};
  RequireEvaluator evaluate(space, symbols);
  std::vector<Config> feasible;
  if (!evaluate.holds_at(-1)) return feasible;
  // Depth first in declaration order (the last parameter fastest), each require checked as soon
  // as its parameters are bound: the work follows the feasible prefixes, not the lists' product.
  // The cap on visits bounds a space whose requires all wait for its last parameters.
  const size_t max_visits = limit > std::numeric_limits<size_t>::max() / 16 ? limit : limit * 16;
  size_t visits = 0;
  Config config;
  const auto too_many = [&](const std::string& what) {
    usage("tune space has more than " + what + " for this problem, more than the limit of " +
          std::to_string(limit) + "; shorten the @tune lists or add @require lines");
  };
  const auto walk = [&](const auto& self, size_t depth) -> void {
    if (depth == space.params.size()) {
      if (feasible.size() == limit) too_many(std::to_string(limit) + " feasible configurations");
      feasible.push_back(config);
      return;
    }
    const TuneParam& param = space.params[depth];
    for (const auto& value : param.values) {
      if (++visits > max_visits) too_many(std::to_string(max_visits) + " partial configurations to try");
      evaluate.set(depth, value);
      if (!evaluate.holds_at(static_cast<int>(depth))) continue;
      config.emplace_back(param.name, value);
      self(self, depth + 1);
      config.pop_back();
    }
  };
  walk(walk, 0);
  return feasible;
}

std::map<std::string, double> problem_symbols(const Op& op, const Problem& problem) {
  const auto names = op.dim_names();
  if (names.size() != problem.dims.size())
    usage(std::string(op.name()) + ": problem " + problem.to_string() + " has " +
          std::to_string(problem.dims.size()) + " dimensions, expected " + std::to_string(names.size()));
  std::map<std::string, double> symbols;
  for (size_t i = 0; i < names.size(); ++i) symbols[names[i]] = static_cast<double>(problem.dims[i]);
  for (const auto& [name, value] : op.param_defaults()) symbols[name] = value;
  for (const auto& [name, value] : problem.params) symbols[name] = value;
  return symbols;
}

std::optional<Config> default_config(std::string_view source_view, const TuneSpace& space) {
  const std::string source(source_view);
  Config config;
  for (const TuneParam& p : space.params) {
    // C++: `#define NAME VALUE`; a Triton (Python) file: a module-level `NAME = VALUE`.
    const std::regex define("#\\s*define\\s+" + p.name + "\\s+([A-Za-z0-9_]+)");
    const std::regex assignment("^" + p.name + "[ \\t]*=[ \\t]*([A-Za-z0-9_]+)[ \\t]*(#.*)?$",
                                std::regex::ECMAScript | std::regex::multiline);
    std::smatch match;
    if (!std::regex_search(source, match, define) && !std::regex_search(source, match, assignment))
      return std::nullopt;
    if (std::find(p.values.begin(), p.values.end(), match[1].str()) == p.values.end()) return std::nullopt;
    config.emplace_back(p.name, match[1].str());
  }
  return config;
}

}  // namespace ak
