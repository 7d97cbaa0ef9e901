// Where one command's time went (`tnk --timings`): the code marks the end of each phase as it goes,
// and the CLI prints the phases when the command ends. Marking is always on and costs one clock read;
// nothing is allocated, so a mark may sit on the hottest path (a warm `sandbox exec`).
#pragma once

#include <string>
#include <string_view>

namespace tnk::phase_timer {

// Ends the phase that began at the previous mark (or at the process's first mark) and names it.
// `name` must outlive the process (a string literal); marks past the 32nd are dropped.
void mark(std::string_view name);

// "timings: config 0.21 ms, resolve 0.80 ms, ... total 3.02 ms (since tnk started: 3.9 ms)".
std::string report();

}  // namespace tnk::phase_timer
