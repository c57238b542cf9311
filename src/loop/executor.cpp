#include "loop/executor.h"

#include <functional>
#include <map>
#include <sstream>

#include "core/error.h"
#include "loop/local_executor.h"
#include "loop/ray_executor.h"

namespace ak {

std::unique_ptr<Executor> make_executor(const ExecutorOptions& options) {
  static const std::map<std::string, std::function<std::unique_ptr<Executor>(const ExecutorOptions&)>> kinds{
      {"local", make_local_executor},
      {"ray", make_ray_executor},
  };
  const auto kind = kinds.find(options.kind);
  if (kind == kinds.end()) throw Error(ErrorKind::Usage, "no executor '" + options.kind + "' (local or ray)");
  return kind->second(options);
}

std::vector<int> parse_gpu_list(const std::string& text, int visible) {
  std::vector<int> gpus;
  if (text == "all") {
    for (int g = 0; g < visible; ++g) gpus.push_back(g);
    if (gpus.empty()) throw Error(ErrorKind::Usage, "--gpus all: this machine shows no GPU");
    return gpus;
  }
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    int gpu = -1;
    try {
      gpu = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || gpu < 0)
      throw Error(ErrorKind::Usage, "--gpus takes 'all' or device numbers like 0,2; got '" + text + "'");
    if (gpu >= visible)
      throw Error(ErrorKind::Usage, "--gpus " + text + ": no GPU " + item + " (this machine shows " +
                                        std::to_string(visible) + ")");
    for (int seen : gpus)
      if (seen == gpu) throw Error(ErrorKind::Usage, "--gpus " + text + " names GPU " + item + " twice");
    gpus.push_back(gpu);
  }
  if (gpus.empty()) throw Error(ErrorKind::Usage, "--gpus takes 'all' or device numbers like 0,2");
  return gpus;
}

}  // namespace ak
