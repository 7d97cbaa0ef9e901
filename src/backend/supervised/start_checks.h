// The checks before a supervised start (ns, vm), in the order ensure_running makes them: each refuses with
// the object, why and the fix, before anything of the start is made (record, image, supervisor).
#pragma once

#include <chrono>
#include <filesystem>

#include "context/context.h"
#include "core/result.h"
#include "host/host_probe.h"
#include "naming/backend_kind.h"
#include "sandbox/resolve.h"
#include "state/store.h"

namespace tnk::supervised {

// How long a question to a running sandbox's supervisor (ping, its network policy) may take.
inline constexpr std::chrono::seconds kQueryTimeout{5};

// The project's owner, user namespaces and the maps' helpers for an ordinary user, QEMU and virtiofsd
// for a vm.
Status check_backend(BackendKind backend, const host::HostFacts& facts, const std::filesystem::path& project);

// Security review M5: the sandbox's pids limit and the memory limit its profile sets (a vm: the pids
// limit of its host processes) have a place, unless tnk.toml's allow_unlimited says otherwise.
Status check_limits(Context& ctx, const sandbox::Resolved& r);

// A running sandbox's network policy and review mode are fixed at its start: a command that asks for
// another one is refused.
Status check_running_policy(const state::Store& store, const sandbox::Resolved& r);
Status check_running_review(const state::Store& store, const sandbox::Resolved& r);

}  // namespace tnk::supervised
