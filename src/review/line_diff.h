// A line diff for `tnk sandbox diff --patch`: Myers' O(ND) algorithm over two texts' lines, grouped
// into unified-diff hunks as git prints them. Written here rather than run by the host's git, so that
// nothing the sandbox wrote (a .gitattributes diff driver or textconv, a config) can run anything.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tnk::review {

// The lines of `text`, each with its '\n' (the last one without, when the text does not end in one).
std::vector<std::string_view> split_lines(std::string_view text);

struct HunkLine {
  char op = ' ';          // ' ' context, '-' removed, '+' added
  std::string_view text;  // the line, with its '\n' when it has one
};

struct Hunk {
  size_t old_start = 0, new_start = 0;  // the lines before the hunk in each text (0-based)
  size_t old_count = 0, new_count = 0;
  std::vector<HunkLine> lines;
};

// The hunks that turn `before` into `after`, with `context` unchanged lines around each change (hunks
// that close are merged, as diff and git do). Past `max_edits` differing lines the middle is shown as
// removed and added whole: still a correct patch, in bounded time and memory.
std::vector<Hunk> unified_hunks(const std::vector<std::string_view>& before, const std::vector<std::string_view>& after,
                                size_t context = 3, size_t max_edits = 1000);

// "@@ -1,3 +1,4 @@" for `hunk`.
std::string hunk_header(const Hunk& hunk);

}  // namespace tnk::review
