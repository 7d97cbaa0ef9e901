// `tnk doctor --backend k8s`: what the k8s backend needs of the cluster tnk.toml names. kubectl reaches it,
// agent-sandbox's API is installed, the runtime class keeps agents out of plain containers, and the network
// plugin enforces NetworkPolicy egress (egress_probe.h: two pods, created and deleted again).
#pragma once

#include "backend/k8s/runner.h"
#include "doctor/doctor.h"

namespace tnk::k8s {

void add_k8s_doctor_checks(doctor::Registry& registry, const Cluster& cluster);

}  // namespace tnk::k8s
