// The supervisor's one way to write a line of its own to supervisor.log (its stderr, which
// supervisor_main drains into the capped log).
#pragma once

#include <string>

namespace tnk::supervisor {

// Writes "tnk-supervisor: <text>" and a newline.
void log_line(const std::string& text);

}  // namespace tnk::supervisor
