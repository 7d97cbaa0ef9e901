#include "net/ssh_wire.h"

namespace tnk::net {
namespace {

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  auto at = kBase64.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

}  // namespace

bool SshReader::byte(uint8_t& out) {
  if (data_.empty()) return false;
  out = static_cast<uint8_t>(data_[0]);
  data_.remove_prefix(1);
  return true;
}

bool SshReader::u32(uint32_t& out) {
  if (data_.size() < 4) return false;
  out = 0;
  for (int i = 0; i < 4; ++i) out = (out << 8) | static_cast<uint8_t>(data_[static_cast<size_t>(i)]);
  data_.remove_prefix(4);
  return true;
}

bool SshReader::string(std::string_view& out) {
  std::string_view before = data_;
  uint32_t length = 0;
  if (!u32(length)) return false;
  if (length > data_.size()) {
    data_ = before;
    return false;
  }
  out = data_.substr(0, length);
  data_.remove_prefix(length);
  return true;
}

bool SshReader::boolean(bool& out) {
  uint8_t value = 0;
  if (!byte(value)) return false;
  out = value != 0;
  return true;
}

void put_u32(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

void put_string(std::string& out, std::string_view value) {
  put_u32(out, static_cast<uint32_t>(value.size()));
  out.append(value);
}

std::string base64_encode(std::string_view data, bool pad) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint32_t{static_cast<uint8_t>(data[i])} << 16) | (uint32_t{static_cast<uint8_t>(data[i + 1])} << 8) |
                 uint32_t{static_cast<uint8_t>(data[i + 2])};
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kBase64[(v >> shift) & 63]);
  }
  size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(data[i]) << 16);
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<uint8_t>(data[i + 1]) << 8);
    out.push_back(kBase64[(v >> 18) & 63]);
    out.push_back(kBase64[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kBase64[(v >> 6) & 63]);
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int value = base64_value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xff));
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
      out.push_back(static_cast<char>(bits & 0xff));
      bits = 0;
      count = 0;
    }
  }
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xff));
    out.push_back(static_cast<char>((bits >> 2) & 0xff));
  }
  return out;
}

Result<std::string> parse_public_key_line(std::string_view line) {
  auto space = line.find(' ');
  if (space == std::string_view::npos || space == 0)
    return failed("\"TYPE BASE64 [COMMENT]\", as a .pub file holds it");
  std::string_view type = line.substr(0, space);
  std::string_view rest = line.substr(space + 1);
  std::string_view encoded = rest.substr(0, rest.find(' '));
  auto blob = base64_decode(encoded);
  if (!blob || blob->empty()) return failed("a key whose second word is base64");
  if (ssh_blob_type(*blob) != type) return failed("a key whose blob is of its type '" + std::string(type) + "'");
  return *blob;
}

std::string ssh_blob_type(std::string_view blob) {
  SshReader reader(blob);
  std::string_view type;
  if (!reader.string(type)) return "";
  return std::string(type);
}

}  // namespace tnk::net
