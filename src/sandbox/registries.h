// The registries a profile names in provision.allow (@debian, @npm), turned into the host names
// the host's own clients are configured for: nothing here names a registry host itself.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::sandbox {

// The provisioning allow-list: @debian always (the image's apt sources), plus `provision_allow`
// with registry names replaced by their hosts.
Result<std::vector<std::string>> provision_allow_list(const std::vector<std::string>& provision_allow);

}  // namespace tnk::sandbox
