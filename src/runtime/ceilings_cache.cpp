#include "runtime/ceilings_cache.h"

#include <algorithm>
#include <filesystem>

#include "core/paths.h"

namespace ak {
namespace {

std::filesystem::path cache_path(const DeviceInfo& device) {
  std::string id = device.id;
  std::replace_if(
      id.begin(), id.end(),
      [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)) && ch != '-'; }, '_');
  return cache_dir() / "ceilings" / (id + ".json");
}

}  // namespace

std::optional<Ceilings> cached_ceilings(const DeviceInfo& device) {
  const auto path = cache_path(device);
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    return nlohmann::json::parse(read_text_file(path)).get<Ceilings>();
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache entry is measured again
  }
}

Ceilings device_ceilings(Runtime& runtime, bool remeasure) {
  if (!remeasure)
    if (auto cached = cached_ceilings(runtime.info())) return *cached;
  Ceilings c = runtime.measure_ceilings();
  write_file_atomically(cache_path(runtime.info()), nlohmann::json(c).dump(2));
  return c;
}

RooflineTimes roofline_times(const Ceilings& c, double flops, double bytes) {
  return {c.copy_gbps > 0 ? bytes / (c.copy_gbps * 1e9) : 0,
          c.matrix_tflops > 0 ? flops / (c.matrix_tflops * 1e12) : 0};
}

double roofline_fraction(const Ceilings& c, double flops, double bytes, double seconds) {
  return seconds > 0 ? roofline_times(c, flops, bytes).seconds() / seconds : 0;
}

}  // namespace ak
