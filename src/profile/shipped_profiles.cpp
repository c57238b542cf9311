#include "profile/shipped_profiles.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"

namespace ak {
namespace {

namespace fs = std::filesystem;

std::string shape_text(const std::vector<int64_t>& shape, char separator) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text.push_back(separator);
    text.append(std::to_string(shape[i]));
  }
  return text;
}

std::string normalized_shape(std::string shape) {
  std::replace(shape.begin(), shape.end(), 'x', ',');
  return shape;
}

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string describe(const Profile& p) {
  return p.model.spec + " (" + shape_text(p.model.input_shape, 'x') + ", " + p.model.dtype +
         ") measured on " + p.device_name;
}

}  // namespace

fs::path shipped_profiles_dir() {
  if (const char* dir = std::getenv("AUTOKERNEL_PROFILES"); dir && *dir) return dir;
  return project_dir() / "python" / "autokernel" / "profiles";
}

std::vector<ShippedProfile> shipped_profiles(const std::string& spec, const std::string& shape,
                                             const std::string& dtype) {
  std::vector<ShippedProfile> found;
  const fs::path dir = shipped_profiles_dir();
  if (!fs::is_directory(dir)) return found;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    Profile p = read_profile_file(file);
    if (p.model.spec != spec || (!dtype.empty() && dtype != "auto" && p.model.dtype != dtype)) continue;
    if (!shape.empty() && shape_text(p.model.input_shape, ',') != normalized_shape(shape)) continue;
    found.push_back({file, std::move(p)});
  }
  std::stable_partition(found.begin(), found.end(),
                        [](const ShippedProfile& s) { return s.profile.device_type == "cuda"; });
  return found;
}

std::string ensure_profile(const fs::path& workspace, const std::string& spec, const std::string& shape,
                           const std::string& dtype) {
  const fs::path own = workspace / kProfileFile;
  if (fs::exists(own)) {
    const Profile p = read_profile(workspace);
    if (p.model.spec == spec && p.shipped_from.empty())
      return "using the profile measured in " + workspace.string() + ": " + describe(p);
    if (p.model.spec != spec && p.shipped_from.empty())
      throw Error(ErrorKind::Usage, workspace.string() + " holds a measured profile of " + p.model.spec +
                                        ": give " + spec + " a workspace of its own (--workspace)");
  }
  const auto shipped = shipped_profiles(spec, shape, dtype);
  if (shipped.empty())
    throw Error(ErrorKind::Usage, "no profile of " + spec + " in " + workspace.string() +
                                      " and none shipped in " + shipped_profiles_dir().string() +
                                      ": run `autokernel profile --model " + spec + "` first");
  const ShippedProfile& chosen = shipped.front();
  auto document = nlohmann::json::parse(read_text_file(chosen.file));
  document["shipped_from"] = chosen.file.filename().string();
  fs::create_directories(workspace);
  write_file_atomically(own, document.dump(1) + "\n");
  return "using the shipped profile of " + describe(chosen.profile) + " (" + chosen.file.filename().string() +
         "); `autokernel profile --model " + spec + "` measures your own";
}

std::string shipped_name(const Profile& profile) {
  return profile.short_name() + "_" + shape_text(profile.model.input_shape, 'x') + "_" + profile.model.dtype +
         "_" + slug(profile.device_name) + ".json";
}

}  // namespace ak
