// Running one of setup's commands (a SetupOp of kind kRun: usermod), for `tnk setup` and for the
// reservation of root's ranges at a start (root_reservation.h): the same argv, the same error.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace tnk::host {

// Runs `argv` (no shell); a non-zero exit is an error naming the program, its status and its stderr.
Status run_setup_command(const std::vector<std::string>& argv);

}  // namespace tnk::host
