#include "net/secret_match.h"

#include <algorithm>
#include <array>
#include <vector>

namespace tnk::net {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether `digits` (what the text has of them so far) spell the start of `value` as hex, zero-padded to
// `width` digits.
bool hex_prefix_of(std::string_view digits, unsigned value, std::size_t width) {
  for (std::size_t i = 0; i < digits.size(); ++i) {
    unsigned nibble = (value >> (4 * (width - 1 - i))) & 0xfu;
    if (hex_value(digits[i]) != static_cast<int>(nibble)) return false;
  }
  return true;
}

// The byte a JSON two-character escape `\x` stands for, or 0 when `x` makes none.
char json_short_escape(char x) {
  switch (x) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return 0;
  }
}

// The lengths of the forms of the byte `c` that `text` holds at `at`, and whether the text ends inside
// a form that so far spells `c`.
struct Forms {
  std::array<std::size_t, 3> lengths{};
  std::size_t count = 0;
  bool cut = false;
};

// `form` ("%" then 2 hex digits, or "\u" then 4) at `at`: whole (added to `forms`), cut, or not `c`.
void fixed_form(std::string_view text, std::size_t at, std::string_view lead, std::size_t digits, unsigned c,
                Forms& forms) {
  std::string_view rest = text.substr(at);
  std::string_view shown = rest.substr(0, std::min(rest.size(), lead.size()));
  if (lead.substr(0, shown.size()) != shown) return;
  if (rest.size() < lead.size()) {
    forms.cut = true;
    return;
  }
  std::string_view hex = rest.substr(lead.size(), std::min(rest.size() - lead.size(), digits));
  if (!hex_prefix_of(hex, c, digits)) return;
  if (hex.size() < digits) {
    forms.cut = true;
  } else {
    forms.lengths[forms.count++] = lead.size() + digits;
  }
}

Forms forms_of(std::string_view text, std::size_t at, char c) {
  Forms forms;
  if (at >= text.size()) {
    forms.cut = true;
    return forms;
  }
  if (text[at] == c) forms.lengths[forms.count++] = 1;
  auto byte = static_cast<unsigned char>(c);
  fixed_form(text, at, "%", 2, byte, forms);
  if (byte < 0x80) fixed_form(text, at, "\\u", 4, byte, forms);  // \u escapes code points; ASCII is one byte
  if (text[at] == '\\') {
    if (at + 1 == text.size()) {
      forms.cut = true;
    } else if (json_short_escape(text[at + 1]) == c) {
      forms.lengths[forms.count++] = 2;
    }
  }
  return forms;
}

}  // namespace

// The ends that the secret's first i bytes can reach from `at` (usually one: forms rarely overlap), kept
// for each next byte; a form the text ends inside marks the match as cut rather than absent.
SecretMatch match_secret(std::string_view text, std::size_t at, std::string_view secret) {
  if (secret.empty() || at >= text.size()) return {};
  char first = text[at];
  if (first != secret.front() && first != '%' && first != '\\') return {};  // most bytes: no allocation
  std::vector<std::size_t> ends{at}, next;
  bool cut = false;
  for (char c : secret) {
    next.clear();
    for (std::size_t end : ends) {
      Forms forms = forms_of(text, end, c);
      cut = cut || forms.cut;
      for (std::size_t i = 0; i < forms.count; ++i) {
        std::size_t reached = end + forms.lengths[i];
        if (std::find(next.begin(), next.end(), reached) == next.end()) next.push_back(reached);
      }
    }
    if (next.empty()) return {cut ? SecretMatch::kCut : SecretMatch::kNone, 0};
    ends.swap(next);
  }
  return {SecretMatch::kWhole, *std::max_element(ends.begin(), ends.end()) - at};
}

}  // namespace tnk::net
