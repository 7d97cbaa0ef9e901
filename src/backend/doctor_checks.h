// The doctor checks of the backends: what this host offers each of them, and what auto picks.
#pragma once

#include "context/context.h"
#include "core/paths.h"
#include "core/result.h"
#include "doctor/doctor.h"
#include "host/host_probe.h"

namespace tnk::backend {

void add_doctor_checks(doctor::Registry& registry, const host::HostFacts& facts, const Paths& paths);

// `tnk doctor --backend NAME`: the checks of a backend that runs somewhere else (k8s: the cluster in
// tnk.toml). A usage error for a backend whose checks are all of this host (those are always run).
Status add_cluster_checks(Context& ctx, doctor::Registry& registry, const std::string& backend);

}  // namespace tnk::backend
