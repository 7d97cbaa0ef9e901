// Where one command's time went (`tnk --timings`): the code marks the end of each phase as it goes,
// and the CLI prints the phases when the command ends. Marking is always on and costs one clock read;
// nothing is allocated, so a mark may sit on the hottest path (a warm `sandbox exec`).
#pragma once

#include <string>
#include <string_view>

namespace tnk {

// Ends the phase that began at the previous mark (or when the program's static objects were made) and
// names it. `name` must outlive the process (a string literal); marks past the 32nd are dropped.
void mark_phase(std::string_view name);

// "timings: command tree 0.12 ms, parse 0.02 ms, ...; total 2.33 ms".
std::string phase_timings();

}  // namespace tnk
