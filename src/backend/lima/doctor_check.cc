#include "backend/lima/doctor_check.h"

#include <cstdlib>

#include "backend/lima/limactl.h"

namespace tnk::lima {

using doctor::Outcome;

std::optional<std::string> parse_version(const std::string& version_output) {
  const std::string marker = "version ";
  auto at = version_output.find(marker);
  if (at == std::string::npos) return std::nullopt;
  auto begin = at + marker.size();
  auto end = version_output.find_first_of(" \t\r\n", begin);
  std::string version = version_output.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (version.starts_with("v")) version.erase(0, 1);
  if (version.empty() || version[0] < '0' || version[0] > '9') return std::nullopt;
  return version;
}

Outcome lima_outcome(const host::HostFacts& facts, const std::optional<std::string>& version_output) {
  if (!facts.limactl_found) {
    if (!facts.is_macos) {
      return {doctor::Status::kInfo, "not applicable: limactl is not installed (the lima backend is for macOS hosts)",
              ""};
    }
    return {doctor::Status::kWarn, "limactl is not on $PATH: the lima backend cannot run", "brew install lima"};
  }
  std::optional<std::string> version = version_output ? parse_version(*version_output) : std::nullopt;
  if (!version) {
    return {doctor::Status::kWarn, facts.limactl_path + " does not answer `limactl --version`",
            "reinstall Lima (brew reinstall lima)"};
  }
  int major = std::atoi(version->c_str());
  if (major < kMinLimaMajor) {
    return {doctor::Status::kWarn, "Lima " + *version + " at " + facts.limactl_path + " is too old",
            "tnk needs Lima " + std::to_string(kMinLimaMajor) + ".0 or newer: brew upgrade lima"};
  }
  return {doctor::Status::kOk, "Lima " + *version + " (" + facts.limactl_path + ")", ""};
}

void add_doctor_check(doctor::Registry& registry, const host::HostFacts& facts) {
  registry.add({"lima", "lima backend: limactl", false, [facts]() -> Outcome {
                  std::optional<std::string> output;
                  if (facts.limactl_found) {
                    auto ran = system_limactl()->capture({facts.limactl_path, "--version"}, std::chrono::seconds(10));
                    if (ran && ran->exit_code == 0) output = ran->out + ran->err;
                  }
                  return lima_outcome(facts, output);
                }});
}

}  // namespace tnk::lima
