// The SSH wire encoding (RFC 4251, section 5) as the agent protocol uses it, and public keys as
// authorized_keys and known_hosts write them ("ssh-ed25519 AAAA... comment"). Every read checks its
// length: these bytes come from inside the sandbox.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::net {

// Reads fields from the front of `data`; a read past the end fails and leaves the reader where it was.
class SshReader {
 public:
  explicit SshReader(std::string_view data) : data_(data) {}
  bool byte(uint8_t& out);
  bool u32(uint32_t& out);
  bool string(std::string_view& out);  // uint32 length, then that many bytes
  bool boolean(bool& out);
  bool done() const { return data_.empty(); }

 private:
  std::string_view data_;
};

void put_u32(std::string& out, uint32_t value);
void put_string(std::string& out, std::string_view value);

// "TYPE BASE64 [COMMENT]" as one line: the key's wire blob, whose own type name must be TYPE. The error
// says what is wrong, for "key '...' must be a public key: ...".
Result<std::string> parse_public_key_line(std::string_view line);

// The type name a key (or signature) blob starts with; empty when it has none.
std::string ssh_blob_type(std::string_view blob);

}  // namespace tnk::net
