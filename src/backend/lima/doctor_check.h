// tnk doctor's `lima` check: limactl on $PATH and its version. Not applicable (info, never a
// failure) on a host without Lima that is not macOS.
#pragma once

#include <optional>
#include <string>

#include "doctor/doctor.h"
#include "host/host_probe.h"

namespace tnk::lima {

// The minimum Lima tnk's instance YAML needs (`base:` templates, `proto: any` port rules).
inline constexpr int kMinLimaMajor = 1;

// "1.0.3" from "limactl version 1.0.3"; nullopt when the text names no version.
std::optional<std::string> parse_version(const std::string& version_output);

// The check's outcome for these facts and the output of `limactl --version` (nullopt: it could not run).
doctor::Outcome lima_outcome(const host::HostFacts& facts, const std::optional<std::string>& version_output);

void add_doctor_check(doctor::Registry& registry, const host::HostFacts& facts);

}  // namespace tnk::lima
