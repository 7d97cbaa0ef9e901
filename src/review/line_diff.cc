#include "review/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tnk::review {
namespace {

using Lines = std::vector<std::string_view>;

struct Op {
  char op;   // ' ', '-', '+'
  size_t a;  // index in before (' ' and '-')
  size_t b;  // index in after (' ' and '+')
};

// Myers' greedy shortest edit script between before[a0, a1) and after[b0, b1), appended to `out`
// in order. Round d keeps the furthest x reached on each diagonal k = x - y in [-d, d] (-1: none, or
// off the grid: a move is taken only if it stays inside), so the path can be walked back; past
// `max_edits` rounds the whole range is a removal and an addition.
void myers(const Lines& x, size_t a0, size_t a1, const Lines& y, size_t b0, size_t b1, size_t max_edits,
           std::vector<Op>& out) {
  const auto n = static_cast<int64_t>(a1 - a0), m = static_cast<int64_t>(b1 - b0);
  const int64_t limit = std::min<int64_t>(n + m, static_cast<int64_t>(max_edits));
  auto same = [&](int64_t i, int64_t j) { return x[a0 + static_cast<size_t>(i)] == y[b0 + static_cast<size_t>(j)]; };
  std::vector<std::vector<int64_t>> trace;  // trace[d][k + d]: the furthest x on diagonal k after round d
  auto reached = [&](int64_t d, int64_t k) -> int64_t {
    if (d < 0 || k < -d || k > d) return -1;
    return trace[static_cast<size_t>(d)][static_cast<size_t>(k + d)];
  };
  // Round d's step onto diagonal k: down from k + 1 (an addition) or right from k - 1 (a removal),
  // whichever gets further. Returns {down, the x it starts the snake at}; x -1 when neither fits.
  auto step = [&](int64_t d, int64_t k) -> std::pair<bool, int64_t> {
    int64_t down = -1, right = -1;
    if (int64_t from = reached(d - 1, k + 1); from >= 0 && from - (k + 1) < m) down = from;
    if (int64_t from = reached(d - 1, k - 1); from >= 0 && from < n) right = from + 1;
    return down >= right ? std::make_pair(true, down) : std::make_pair(false, right);
  };
  int64_t found = -1;
  for (int64_t d = 0; d <= limit && found < 0; ++d) {
    std::vector<int64_t> round(static_cast<size_t>(2 * d + 1), -1);
    for (int64_t k = -d; k <= d; k += 2) {
      if (k < -m || k > n) continue;
      int64_t px = d == 0 ? 0 : step(d, k).second;
      if (px < 0) continue;
      int64_t py = px - k;
      while (px < n && py < m && same(px, py)) ++px, ++py;
      round[static_cast<size_t>(k + d)] = px;
      if (px == n && py == m) found = d;
    }
    trace.push_back(std::move(round));
  }
  if (found < 0) {  // too many differences: remove all, add all
    for (size_t i = a0; i < a1; ++i) out.push_back({'-', i, 0});
    for (size_t j = b0; j < b1; ++j) out.push_back({'+', 0, j});
    return;
  }
  std::vector<Op> rev;
  int64_t px = n, py = m;
  auto snake_back = [&](int64_t to_x) {
    while (px > to_x) {
      --px, --py;
      rev.push_back({' ', a0 + static_cast<size_t>(px), b0 + static_cast<size_t>(py)});
    }
  };
  for (int64_t d = found; d > 0; --d) {
    int64_t k = px - py;
    auto [down, start_x] = step(d, k);
    snake_back(start_x);
    int64_t prev_k = down ? k + 1 : k - 1;
    int64_t prev_x = reached(d - 1, prev_k), prev_y = prev_x - prev_k;
    if (down) {
      rev.push_back({'+', 0, b0 + static_cast<size_t>(prev_y)});
    } else {
      rev.push_back({'-', a0 + static_cast<size_t>(prev_x), 0});
    }
    px = prev_x, py = prev_y;
  }
  snake_back(0);
  out.insert(out.end(), rev.rbegin(), rev.rend());
}

std::vector<Op> edit_script(const Lines& before, const Lines& after, size_t max_edits) {
  size_t head = 0;
  while (head < before.size() && head < after.size() && before[head] == after[head]) ++head;
  size_t tail = 0;
  while (tail < before.size() - head && tail < after.size() - head &&
         before[before.size() - 1 - tail] == after[after.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Op> ops;
  for (size_t i = 0; i < head; ++i) ops.push_back({' ', i, i});
  myers(before, head, before.size() - tail, after, head, after.size() - tail, max_edits, ops);
  for (size_t i = tail; i > 0; --i) ops.push_back({' ', before.size() - i, after.size() - i});
  return ops;
}

std::string range(size_t start, size_t count) {
  // An empty range names the line before it; one line needs no count (diff's and git's form).
  if (count == 0) return std::to_string(start) + ",0";
  if (count == 1) return std::to_string(start + 1);
  return std::to_string(start + 1) + "," + std::to_string(count);
}

}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t len = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(0, len));
    text.remove_prefix(len);
  }
  return lines;
}

std::vector<Hunk> unified_hunks(const Lines& before, const Lines& after, size_t context, size_t max_edits) {
  std::vector<Op> ops = edit_script(before, after, max_edits);
  // Where each op starts in both texts, to number the hunks.
  std::vector<size_t> at_a(ops.size() + 1), at_b(ops.size() + 1);
  for (size_t i = 0; i < ops.size(); ++i) {
    at_a[i + 1] = at_a[i] + (ops[i].op != '+' ? 1 : 0);
    at_b[i + 1] = at_b[i] + (ops[i].op != '-' ? 1 : 0);
  }
  std::vector<Hunk> hunks;
  size_t i = 0;
  while (i < ops.size()) {
    while (i < ops.size() && ops[i].op == ' ') ++i;
    if (i == ops.size()) break;
    size_t first = i, last = i;  // the first and last change of this hunk
    for (size_t j = i; j < ops.size(); ++j) {
      if (ops[j].op == ' ') continue;
      if (j > last + 1 + 2 * context) break;  // more unchanged lines between than two contexts
      last = j;
    }
    size_t begin = first > context ? first - context : 0;
    size_t end = std::min(ops.size(), last + context + 1);
    Hunk hunk;
    hunk.old_start = at_a[begin];
    hunk.new_start = at_b[begin];
    hunk.old_count = at_a[end] - at_a[begin];
    hunk.new_count = at_b[end] - at_b[begin];
    for (size_t j = begin; j < end; ++j) {
      hunk.lines.push_back({ops[j].op, ops[j].op == '+' ? after[ops[j].b] : before[ops[j].a]});
    }
    hunks.push_back(std::move(hunk));
    i = end;
  }
  return hunks;
}

std::string hunk_header(const Hunk& hunk) {
  return "@@ -" + range(hunk.old_start, hunk.old_count) + " +" + range(hunk.new_start, hunk.new_count) + " @@";
}

}  // namespace tnk::review
