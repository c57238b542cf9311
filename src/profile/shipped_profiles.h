// Profiles of the shipped models measured once on a GPU and kept in the repository
// (python/autokernel/profiles/, written by bench/gpu_bridge.sh), so that `autokernel extract
// --model llama` starts without running the model. A profile the user measures in the workspace
// (`autokernel profile`) always takes precedence over a shipped one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "profile/profile_doc.h"

namespace ak {

struct ShippedProfile {
  std::filesystem::path file;
  Profile profile;
};

// Where shipped profiles live; $AUTOKERNEL_PROFILES overrides it (tests, a private collection).
std::filesystem::path shipped_profiles_dir();

// The shipped profiles of `spec`, those of `shape` ("8,512") and `dtype` when given (non-empty);
// GPU profiles first, then by file name.
std::vector<ShippedProfile> shipped_profiles(const std::string& spec, const std::string& shape,
                                             const std::string& dtype);

// Makes sure the workspace holds a profile of `spec`: a measured one already there is kept;
// else the first matching shipped profile is copied in. Returns the line that says which was
// used. Throws Error(Usage) when there is neither.
std::string ensure_profile(const std::filesystem::path& workspace, const std::string& spec,
                           const std::string& shape, const std::string& dtype);

// The file name a measured profile is shipped under: "llama_8x512_fp16_nvidia-h100-80gb-hbm3.json".
std::string shipped_name(const Profile& profile);

}  // namespace ak
