// `tnk manpage`: the manual page (roff, section 1) written from the command tree itself, so that every
// command and flag `--help` knows is in `man tnk` too; the build installs its output as tnk.1.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace tnk::cli {

std::string man_page(const CLI::App& root);

}  // namespace tnk::cli
