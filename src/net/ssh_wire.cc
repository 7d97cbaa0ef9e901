#include "net/ssh_wire.h"

#include "net/base64.h"

namespace tnk::net {

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
