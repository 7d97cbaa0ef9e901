// The registries a profile names in network.allow and provision.allow (@debian, @npm), turned into the host names
// the host's own clients are configured for: nothing here names a registry host itself.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::sandbox {

// `entries` (network.allow, provision.allow) with registry names replaced by their hosts, sorted, unique.
Result<std::vector<std::string>> expand_registries(const std::vector<std::string>& entries);

// The provisioning allow-list: @debian (the image's apt sources) and @npm (when the host's npm names a
// registry) always, plus `provision_allow`.
Result<std::vector<std::string>> provision_allow_list(const std::vector<std::string>& provision_allow);

}  // namespace tnk::sandbox
