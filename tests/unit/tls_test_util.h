// Builders of TLS ClientHello bytes for the tests of the SNI parser and of the proxy's CONNECT check:
// each piece as the wire carries it (RFC 8446 4.1.2, RFC 6066 3), so a test can also build wrong ones.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace tnk::net::testing::tls {

inline std::string u8(std::size_t v) { return std::string(1, static_cast<char>(v & 0xff)); }
inline std::string u16(std::size_t v) { return u8(v >> 8) + u8(v); }
inline std::string u24(std::size_t v) { return u8(v >> 16) + u16(v & 0xffff); }

inline std::string extension(std::size_t type, const std::string& body) { return u16(type) + u16(body.size()) + body; }

inline std::string name_entry(const std::string& name, std::size_t type = 0) {
  return u8(type) + u16(name.size()) + name;
}

inline std::string server_name(const std::string& entries) { return extension(0, u16(entries.size()) + entries); }

// A TLS 1.3-style ClientHello body around `extensions` (nullopt: none, as TLS 1.0 allowed).
inline std::string hello_body(const std::optional<std::string>& extensions) {
  std::string body = "\x03\x03" + std::string(32, 'r') + u8(32) + std::string(32, 's');
  body += u16(4) + "\x13\x01\x13\x02" + u8(1) + std::string(1, '\0');
  if (extensions) body += u16(extensions->size()) + *extensions;
  return body;
}

inline std::string handshake(const std::string& body, std::size_t type = 1) {
  return u8(type) + u24(body.size()) + body;
}

// `message` in handshake records of at most `per_record` bytes each.
inline std::string records(const std::string& message, std::size_t per_record = 16384) {
  std::string out;
  for (std::size_t at = 0; at < message.size(); at += per_record) {
    std::string chunk = message.substr(at, per_record);
    out += "\x16\x03\x01" + u16(chunk.size()) + chunk;
  }
  return out;
}

inline std::string hello_with(const std::string& extensions) { return records(handshake(hello_body(extensions))); }

// A well-formed hello naming `sni` (nullopt: no server_name extension), in records of `per_record` bytes.
inline std::string client_hello(const std::optional<std::string>& sni, std::size_t per_record = 16384) {
  std::string extensions = extension(10, u16(2) + "\x00\x1d");
  if (sni) extensions += server_name(name_entry(*sni));
  return records(handshake(hello_body(extensions)), per_record);
}

}  // namespace tnk::net::testing::tls
