#include "search/strategy_space.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>

#include "core/error.h"

namespace ak {

uint64_t draw_below(std::mt19937_64& rng, uint64_t bound) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = kMax - kMax % bound;  // a whole number of cycles of `bound`: no bias
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % bound;
}

double draw_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

namespace {

std::optional<long long> as_integer(const std::string& text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Levels for one parameter's values, listed in order of first appearance.
std::unordered_map<std::string, uint32_t> value_levels(std::vector<std::string> values) {
  const bool numeric = std::all_of(values.begin(), values.end(), [](const auto& v) { return as_integer(v); });
  if (numeric)
    std::stable_sort(values.begin(), values.end(),
                     [](const auto& a, const auto& b) { return *as_integer(a) < *as_integer(b); });
  std::unordered_map<std::string, uint32_t> levels;
  for (const auto& value : values) levels.emplace(value, static_cast<uint32_t>(levels.size()));
  return levels;
}

void check_same_params(const Config& first, const Config& config) {
  bool same = first.size() == config.size();
  for (size_t p = 0; same && p < first.size(); ++p) same = first[p].first == config[p].first;
  if (!same)
    throw Error(ErrorKind::Internal, "feasible configurations name different parameters: '" +
                                         to_string(first) + "' and '" + to_string(config) + "'");
}

}  // namespace

SearchSpace::SearchSpace(std::vector<Config> feasible) : configs_(std::move(feasible)) {
  if (configs_.empty()) return;
  const size_t params = configs_.front().size();
  std::vector<std::vector<std::string>> values(params);
  std::vector<std::unordered_map<std::string, bool>> seen(params);
  for (const auto& config : configs_) {
    check_same_params(configs_.front(), config);
    for (size_t p = 0; p < params; ++p)
      if (seen[p].emplace(config[p].second, true).second) values[p].push_back(config[p].second);
  }
  int64_t stride = 1;
  for (size_t p = 0; p < params; ++p) {
    level_of_.push_back(value_levels(std::move(values[p])));
    strides_.push_back(stride);
    const auto count = static_cast<int64_t>(level_of_.back().size());
    if (stride > std::numeric_limits<int64_t>::max() / 2 / count)
      throw Error(ErrorKind::Unsupported, "tuning space has too many combinations of values to index");
    stride *= count;
  }
  levels_.reserve(configs_.size() * params);
  for (size_t i = 0; i < configs_.size(); ++i) {
    int64_t code = 0;
    for (size_t p = 0; p < params; ++p) {
      levels_.push_back(level_of_[p].at(configs_[i][p].second));
      code += levels_.back() * strides_[p];
    }
    index_of_code_.emplace(code, static_cast<uint32_t>(i));
  }
}

std::optional<size_t> SearchSpace::find(const Config& config) const {
  if (configs_.empty() || config.size() != param_count()) return std::nullopt;
  int64_t code = 0;
  for (size_t p = 0; p < config.size(); ++p) {
    if (config[p].first != configs_.front()[p].first) return std::nullopt;
    const auto level = level_of_[p].find(config[p].second);
    if (level == level_of_[p].end()) return std::nullopt;
    code += level->second * strides_[p];
  }
  return at_code(code);
}

int64_t SearchSpace::code_of(size_t index) const {
  int64_t code = 0;
  for (size_t p = 0; p < param_count(); ++p) code += level(index, p) * strides_[p];
  return code;
}

std::optional<size_t> SearchSpace::at_code(int64_t code) const {
  const auto found = index_of_code_.find(code);
  if (found == index_of_code_.end()) return std::nullopt;
  return found->second;
}

std::vector<size_t> SearchSpace::one_step_neighbours(size_t center) const {
  const int64_t code = code_of(center);
  std::vector<size_t> neighbours;
  for (size_t p = 0; p < param_count(); ++p) {
    const auto here = static_cast<int64_t>(level(center, p));
    for (int64_t direction : {-1, 1}) {
      for (int64_t to = here + direction; to >= 0 && to < static_cast<int64_t>(level_count(p));
           to += direction) {
        if (auto found = at_code(code + (to - here) * strides_[p])) {
          neighbours.push_back(*found);
          break;
        }
      }
    }
  }
  return neighbours;
}

std::vector<size_t> SearchSpace::single_changes(size_t center) const {
  const int64_t code = code_of(center);
  std::vector<size_t> changes;
  for (size_t p = 0; p < param_count(); ++p) {
    const auto here = static_cast<int64_t>(level(center, p));
    for (int64_t to = 0; to < static_cast<int64_t>(level_count(p)); ++to)
      if (to != here)
        if (auto found = at_code(code + (to - here) * strides_[p])) changes.push_back(*found);
  }
  return changes;
}

std::vector<size_t> SearchSpace::two_step_neighbours(size_t center) const {
  const int64_t code = code_of(center);
  auto can_move = [&](size_t p, int64_t direction) {
    const int64_t to = static_cast<int64_t>(level(center, p)) + direction;
    return to >= 0 && to < static_cast<int64_t>(level_count(p));
  };
  std::vector<size_t> neighbours;
  for (size_t p = 0; p < param_count(); ++p)
    for (size_t q = p + 1; q < param_count(); ++q)
      for (int64_t dp : {-1, 1})
        for (int64_t dq : {-1, 1})
          if (can_move(p, dp) && can_move(q, dq))
            if (auto found = at_code(code + dp * strides_[p] + dq * strides_[q]))
              neighbours.push_back(*found);
  return neighbours;
}

Explored::Explored(const SearchSpace& space) : space_(space), proposed_(space.size(), false) {
  reset();
  resets_ = 0;
}

void Explored::reset() {
  pool_.resize(space_.size());
  pool_position_.resize(space_.size());
  for (uint32_t i = 0; i < pool_.size(); ++i) pool_[i] = pool_position_[i] = i;
  taken_per_level_.assign(space_.param_count(), {});
  for (size_t p = 0; p < space_.param_count(); ++p) taken_per_level_[p].assign(space_.level_count(p), 0);
  config_at_.clear();
  unresolved_.clear();
  outcomes_.clear();
  ++resets_;
  for (size_t i = 0; i < proposed_.size(); ++i)
    if (proposed_[i]) mark_taken(i);
}

void Explored::mark_taken(size_t config) {
  if (taken(config)) return;
  const uint32_t place = pool_position_[config];
  pool_[place] = pool_.back();
  pool_position_[pool_[place]] = place;
  pool_.pop_back();
  pool_position_[config] = kTaken;
  for (size_t p = 0; p < space_.param_count(); ++p) ++taken_per_level_[p][space_.level(config, p)];
}

void Explored::take(size_t config) {
  proposed_[config] = true;
  mark_taken(config);
}

void Explored::absorb(const std::vector<Trial>& history) {
  if (history.size() < config_at_.size()) reset();
  for (size_t position = config_at_.size(); position < history.size(); ++position) {
    config_at_.push_back(space_.find(history[position].config));
    if (config_at_.back()) mark_taken(*config_at_.back());
    unresolved_.push_back(position);
  }
  std::erase_if(unresolved_, [&](size_t position) {
    const Trial& trial = history[position];
    if (trial.pending) return false;
    if (config_at_[position]) outcomes_.push_back({*config_at_[position], trial.ok, trial.seconds});
    return true;
  });
}

std::optional<Outcome> Explored::best_since(size_t from) const {
  std::optional<Outcome> best;
  for (size_t i = from; i < outcomes_.size(); ++i)
    if (outcomes_[i].ok && (!best || outcomes_[i].seconds < best->seconds)) best = outcomes_[i];
  return best;
}

std::vector<size_t> untaken_neighbours(const SearchSpace& space, const Explored& explored, size_t center) {
  std::vector<size_t> untaken;
  for (size_t neighbour : space.one_step_neighbours(center))
    if (!explored.taken(neighbour)) untaken.push_back(neighbour);
  if (!untaken.empty()) return untaken;
  for (size_t neighbour : space.two_step_neighbours(center))
    if (!explored.taken(neighbour)) untaken.push_back(neighbour);
  return untaken;
}

}  // namespace ak
