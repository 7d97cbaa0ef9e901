#include "core/phase_timer.h"

#include <time.h>

#include <array>
#include <cstdint>
#include <cstdio>

namespace tnk {
namespace {

struct Mark {
  std::string_view name;
  int64_t at_ns = 0;
};

int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Set when the program's static objects are made, before main: the reference the first phase ends at.
const int64_t g_begin = now_ns();
std::array<Mark, 32> g_marks;
size_t g_count = 0;

std::string milliseconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", static_cast<double>(ns) / 1e6);
  return text;
}

}  // namespace

void mark_phase(std::string_view name) {
  if (g_count < g_marks.size()) g_marks[g_count++] = Mark{name, now_ns()};
}

std::string phase_timings() {
  std::string out = "timings:";
  int64_t previous = g_begin;
  for (size_t i = 0; i < g_count; ++i) {
    out += (i == 0 ? " " : ", ") + std::string(g_marks[i].name) + " " + milliseconds(g_marks[i].at_ns - previous);
    previous = g_marks[i].at_ns;
  }
  out += "; total " + milliseconds(now_ns() - g_begin);
  return out;
}

}  // namespace tnk
