// Provisioning an ns or vm sandbox: the files copied in through sessions of the provisioning
// identity, the script run with its own egress allow-list (sandbox/provision.h has the shared part).
#pragma once

#include <optional>

#include "audit/writer.h"
#include "context/context.h"
#include "core/result.h"
#include "sandbox/provision.h"
#include "sandbox/resolve.h"

namespace tnk::supervised {

Status provision_if_needed(Context& ctx, const sandbox::Resolved& resolved, const sandbox::ProvisionRequest& request,
                           std::optional<audit::AuditWriter>& audit);

}  // namespace tnk::supervised
