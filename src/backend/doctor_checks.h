// The doctor checks of the backends: what this host offers each of them, and what auto picks.
#pragma once

#include "backend/host_probe.h"
#include "core/paths.h"
#include "doctor/doctor.h"

namespace tnk::backend {

void add_doctor_checks(doctor::Registry& registry, const HostFacts& facts, const Paths& paths);

}  // namespace tnk::backend
