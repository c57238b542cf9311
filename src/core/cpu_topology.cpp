#include "core/cpu_topology.h"

#include <pthread.h>
#include <sched.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace ak {
namespace {

int read_number(const std::string& path, int fallback) {
  std::ifstream in(path);
  int value = fallback;
  return in >> value ? value : fallback;
}

}  // namespace

std::vector<std::vector<int>> physical_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::map<std::pair<int, int>, size_t> index;  // (package, core) -> position in `cores`
  std::vector<std::vector<int>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    const std::string topology = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    // Without the topology files every CPU counts as a core of its own.
    const std::pair<int, int> key{read_number(topology + "physical_package_id", 0),
                                  read_number(topology + "core_id", -1 - cpu)};
    const auto [it, inserted] = index.try_emplace(key, cores.size());
    if (inserted) cores.emplace_back();
    cores[it->second].push_back(cpu);
  }
  return cores;
}

CorePlan plan_cores(const std::vector<std::vector<int>>& cores, int measuring_workers) {
  CorePlan plan;
  const size_t measuring = 2 * static_cast<size_t>(measuring_workers);
  if (measuring_workers <= 0 || cores.size() < measuring + 1) return plan;
  for (int w = 0; w < measuring_workers; ++w) {
    std::vector<int> cpus;
    for (size_t c = 2 * static_cast<size_t>(w); c < 2 * static_cast<size_t>(w) + 2; ++c)
      cpus.insert(cpus.end(), cores[c].begin(), cores[c].end());
    plan.workers.push_back(std::move(cpus));
  }
  for (size_t c = measuring; c < cores.size(); ++c)
    plan.builds.insert(plan.builds.end(), cores[c].begin(), cores[c].end());
  return plan;
}

bool pin_this_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string text;
  for (int cpu : cpus) {
    if (!text.empty()) text += ',';
    text += std::to_string(cpu);
  }
  return text;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) return {};
    cpus.push_back(std::stoi(item));
  }
  return cpus;
}

}  // namespace ak
