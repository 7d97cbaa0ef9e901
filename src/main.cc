// tnk: a per-project sandbox for AI coding agents. See README.md and docs/.
#include "cli/app.h"

int main(int argc, char** argv) { return tnk::cli::run(argc, argv); }
