#include "supervisor/log_line.h"

#include <cstdio>

namespace tnk::supervisor {

void log_line(const std::string& text) { std::fprintf(stderr, "tnk-supervisor: %s\n", text.c_str()); }

}  // namespace tnk::supervisor
