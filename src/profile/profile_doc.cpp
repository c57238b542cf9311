#include "profile/profile_doc.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"

namespace ak {
namespace {

ProfileEntry entry_of(const nlohmann::json& j) {
  ProfileEntry e;
  if (j.contains("op") && !j["op"].is_null()) {
    e.op = j["op"].get<std::string>();
    e.problem = j.at("problem").get<std::string>();
    e.dtype = j.at("dtype").get<std::string>();
  } else {
    e.aten = j.value("aten", std::string("(unknown)"));
  }
  e.us = j.at("us").get<double>();
  e.calls = j.value("calls", 0.0);
  return e;
}

}  // namespace

std::string ProfiledModel::file() const {
  const auto colon = spec.rfind(':');
  return colon != std::string::npos && spec.substr(0, colon).ends_with(".py") ? spec.substr(0, colon) : "";
}

std::string ProfiledModel::spec_from(const std::filesystem::path& base) const {
  const std::string path = file();
  if (path.empty() || std::filesystem::path(path).is_absolute()) return spec;
  return (base / path).lexically_normal().string() + spec.substr(path.size());
}

std::string Profile::short_name() const {
  const std::string path = model.file();
  std::string name = path.empty() ? model.spec : model.spec.substr(path.size() + 1);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  return name;
}

Profile read_profile(const std::filesystem::path& workspace) {
  const auto path = workspace / kProfileFile;
  if (!std::filesystem::exists(path))
    throw Error(ErrorKind::Usage, "no " + path.string() + ": run `autokernel profile --model ...` first");
  return read_profile_file(path);
}

Profile read_profile_file(const std::filesystem::path& path) {
  try {
    const auto j = nlohmann::json::parse(read_text_file(path));
    Profile p;
    const auto& model = j.at("model");
    p.model = {model.at("spec").get<std::string>(), model.at("input_shape").get<std::vector<int64_t>>(),
               model.at("dtype").get<std::string>(), model.value("seed", int64_t{0})};
    p.device_type = j.at("device").at("type").get<std::string>();
    p.device_name = j.at("device").value("name", p.device_type);
    p.time_kind = j.value("time_kind", std::string("time"));
    p.total_us = j.at("total_us").get<double>();
    p.wall_us = j.value("wall_us", 0.0);
    for (const auto& e : j.at("entries")) p.entries.push_back(entry_of(e));
    for (const auto& s : j.value("sites", nlohmann::json::array()))
      p.sites.push_back({s.value("path", std::string()), s.at("op").get<std::string>(),
                         s.at("problem").get<std::string>(), s.at("dtype").get<std::string>(),
                         s.value("label", std::string())});
    p.notes = j.value("notes", std::vector<std::string>());
    p.shipped_from = j.value("shipped_from", std::string());
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Usage, path.string() + " is not a profile: " + e.what());
  }
}

}  // namespace ak
