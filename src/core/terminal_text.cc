#include "core/terminal_text.h"

#include <cstdint>

namespace tnk {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` (0 when it is not one). Overlong
// forms, surrogates and values above U+10FFFF are invalid.
size_t utf8_length(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  uint8_t lead = byte(0);
  size_t len = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 && lead <= 0xdf ? 2 : 0;
  if (len == 0 || lead > 0xf4 || s.size() < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  uint8_t second = byte(1);
  if (lead == 0xe0 && second < 0xa0) return 0;   // overlong
  if (lead == 0xed && second >= 0xa0) return 0;  // surrogate
  if (lead == 0xf0 && second < 0x90) return 0;   // overlong
  if (lead == 0xf4 && second >= 0x90) return 0;  // above U+10FFFF
  return len;
}

void append_escaped(std::string& out, uint8_t byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out.push_back(kHex[byte >> 4]);
  out.push_back(kHex[byte & 0xf]);
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto byte = static_cast<uint8_t>(text[i]);
    if (byte < 0x80) {
      if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) {
        append_escaped(out, byte);
      } else {
        out.push_back(text[i]);
      }
      ++i;
      continue;
    }
    size_t len = utf8_length(text.substr(i));
    bool c1 = len == 2 && byte == 0xc2 && static_cast<uint8_t>(text[i + 1]) < 0xa0;
    if (len == 0 || c1) {
      for (size_t k = 0; k < (c1 ? 2 : 1); ++k) append_escaped(out, static_cast<uint8_t>(text[i + k]));
      i += c1 ? 2 : 1;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string quoted_path(std::string_view path) {
  bool plain = terminal_safe(path) == path;
  for (char c : path) plain = plain && c != '\n' && c != '\t' && c != '"' && c != '\\';
  if (plain) return std::string(path);
  std::string out = "\"";
  for (size_t i = 0; i < path.size();) {
    auto byte = static_cast<uint8_t>(path[i]);
    size_t len = byte < 0x80 ? 1 : utf8_length(path.substr(i));
    bool c1 = len == 2 && byte == 0xc2 && static_cast<uint8_t>(path[i + 1]) < 0xa0;
    if (byte >= 0x80 && len > 0 && !c1) {  // printable UTF-8 stays readable
      out.append(path.substr(i, len));
      i += len;
      continue;
    }
    if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte == '"' || byte == '\\') {
      out += '\\';
      out.push_back(static_cast<char>(byte));
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += '\\';
      for (int shift = 6; shift >= 0; shift -= 3) out.push_back(static_cast<char>('0' + ((byte >> shift) & 7)));
    } else {
      out.push_back(static_cast<char>(byte));
    }
    ++i;
  }
  return out + "\"";
}

}  // namespace tnk
