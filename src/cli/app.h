// The command line: parse argv, build the Context, run the chosen verb, print its error once,
// and return the exit code.
#pragma once

namespace tnk::cli {

int run(int argc, char** argv);

}  // namespace tnk::cli
