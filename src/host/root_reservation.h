// Root's own subordinate ranges, reserved the first time root starts a sandbox without them (security
// review L5). Before, root's sandboxes fell back to 100000-165535, the range useradd gives the first
// user, who could then signal or trace them from a user namespace of its own. `tnk setup --user root`
// reserves the same ranges ahead of time; a start that finds none does exactly what it does (the same
// plan, the same usermod), under a lock, and says so in one line.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "host/setup_plan.h"

namespace tnk::host {

// Held while one root tnk reads /etc/subuid and /etc/subgid, decides and writes: two starts at once
// reserve one range, not two. Under /run: per boot, root's, the same for every tnk whatever its state
// directory.
inline constexpr const char* kRootRangesLock = "/run/tnk-root-ranges.lock";

// The step that gives root its ranges, from the files' contents; nullopt when root has both already.
// Pure: plan_root_setup's step.
Result<std::optional<SetupStep>> root_reservation_step(const std::string& subuid, const std::string& subgid);

// Run by root: reserves root's ranges when it has none, and returns the line to print then ("" when
// there was nothing to do). usermod writes the files (shadow's own lock, a new file renamed over the
// old). An error when no range is free or usermod fails: the caller refuses to start rather than share
// a user's ids.
Result<std::string> reserve_root_ranges();

}  // namespace tnk::host
