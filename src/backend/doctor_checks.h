// The doctor checks of the backends: what this host offers each of them, and what auto picks.
#pragma once

#include "core/paths.h"
#include "doctor/doctor.h"
#include "host/host_probe.h"

namespace tnk::backend {

void add_doctor_checks(doctor::Registry& registry, const host::HostFacts& facts, const Paths& paths);

}  // namespace tnk::backend
