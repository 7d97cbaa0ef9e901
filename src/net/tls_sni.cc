#include "net/tls_sni.h"

#include <cctype>
#include <cstdint>
#include <optional>

namespace tnk::net {
namespace {

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHello = 1;
constexpr uint32_t kServerNameExtension = 0;
constexpr uint32_t kHostNameType = 0;
constexpr std::size_t kRecordHeaderBytes = 5;
constexpr std::size_t kMaxRecordPayload = 16 * 1024;  // 2^14 (RFC 8446, 5.1)
constexpr std::size_t kHandshakeHeaderBytes = 4;
constexpr std::size_t kMaxHostName = 255;

// Big-endian reads over one buffer, each checked against its end: a read past it marks the reader
// failed and yields zero or nothing, so a parse checks ok() once after a group of reads.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool ok() const { return !failed_; }
  std::size_t left() const { return data_.size() - pos_; }

  uint32_t number(std::size_t bytes) {
    if (failed_ || bytes > left()) {
      failed_ = true;
      return 0;
    }
    uint32_t value = 0;
    for (std::size_t i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += bytes;
    return value;
  }

  std::string_view bytes(std::size_t count) {
    if (failed_ || count > left()) {
      failed_ = true;
      return {};
    }
    std::string_view out = data_.substr(pos_, count);
    pos_ += count;
    return out;
  }

  std::string_view rest() const { return data_.substr(pos_); }

  // A vector of TLS's presentation language: its length in `prefix` bytes, then that many bytes.
  Reader vector(std::size_t prefix) { return Reader(bytes(number(prefix))); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

SniResult verdict(SniStatus status, std::string reason) { return {status, {}, std::move(reason)}; }
SniResult malformed(std::string reason) { return verdict(SniStatus::kMalformed, std::move(reason)); }

bool host_name_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

// Finds the entry of type `wanted` in `list`, whose entries are a type of `type_bytes` and a body with
// a 2-byte length: its body goes to `body` (left empty when there is none). A truncated entry or a
// second one of that type is malformed (`what` names it in the reason).
std::optional<SniResult> single_entry(Reader list, std::size_t type_bytes, uint32_t wanted, const std::string& what,
                                      std::optional<Reader>& body) {
  while (list.left() > 0) {
    uint32_t type = list.number(type_bytes);
    Reader entry = list.vector(2);
    if (!list.ok()) return malformed("a truncated " + what);
    if (type != wanted) continue;
    if (body) return malformed("more than one " + what);
    body = entry;
  }
  return std::nullopt;
}

// The server_name extension's body (RFC 6066, 3): a list with exactly one host_name entry; entries of
// other name types are skipped.
SniResult server_name(Reader ext) {
  Reader list = ext.vector(2);
  if (!ext.ok() || ext.left() != 0 || list.left() == 0) return malformed("a malformed server_name extension");
  std::optional<Reader> entry;
  if (auto bad = single_entry(list, 1, kHostNameType, "host name", entry)) return *bad;
  if (!entry) return verdict(SniStatus::kNoSni, {});
  std::string name(entry->rest());
  if (name.empty() || name.size() > kMaxHostName) {
    return malformed("a server name of " + std::to_string(name.size()) + " bytes");
  }
  for (char& c : name) {
    if (!host_name_byte(c)) return malformed("a server name with a byte other than letters, digits, '-', '.', '_'");
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return {SniStatus::kFound, std::move(name), {}};
}

// A ClientHello's body (RFC 8446, 4.1.2; older versions may end before the extensions).
SniResult parse_client_hello(std::string_view body) {
  Reader hello(body);
  hello.number(2);  // legacy_version
  hello.bytes(32);  // random
  Reader session_id = hello.vector(1);
  Reader cipher_suites = hello.vector(2);
  Reader compression = hello.vector(1);
  if (!hello.ok()) return malformed("a truncated ClientHello");
  if (session_id.left() > 32 || cipher_suites.left() == 0 || cipher_suites.left() % 2 != 0 || compression.left() == 0) {
    return malformed("a malformed ClientHello");
  }
  if (hello.left() == 0) return verdict(SniStatus::kNoSni, {});
  Reader extensions = hello.vector(2);
  if (!hello.ok() || hello.left() != 0) return malformed("a malformed ClientHello extension block");
  std::optional<Reader> ext;
  if (auto bad = single_entry(extensions, 2, kServerNameExtension, "server_name extension", ext)) return *bad;
  return ext ? server_name(*ext) : verdict(SniStatus::kNoSni, {});
}

}  // namespace

SniResult client_hello_sni(std::string_view stream) {
  if (stream.empty()) return {};
  if (static_cast<uint8_t>(stream[0]) != kHandshakeRecord || (stream.size() > 1 && stream[1] != 3)) {
    return verdict(SniStatus::kNotTls, "not a TLS handshake");
  }
  std::string handshake;  // the payloads of the handshake records so far
  std::size_t pos = 0;
  for (;;) {
    if (pos + kRecordHeaderBytes > kMaxClientHelloBytes) return malformed("a ClientHello larger than 16 KiB");
    if (stream.size() - pos < kRecordHeaderBytes) return {};
    Reader header(stream.substr(pos, kRecordHeaderBytes));
    uint32_t type = header.number(1);
    uint32_t major = header.number(1);
    header.number(1);  // minor: any, as the legacy record version varies
    std::size_t length = header.number(2);
    if (type != kHandshakeRecord || major != 3)
      return malformed("a record other than a handshake inside the ClientHello");
    if (length == 0 || length > kMaxRecordPayload)
      return malformed("a handshake record of " + std::to_string(length) + " bytes");
    if (pos + kRecordHeaderBytes + length > kMaxClientHelloBytes) return malformed("a ClientHello larger than 16 KiB");
    if (stream.size() - pos - kRecordHeaderBytes < length) return {};
    handshake.append(stream.substr(pos + kRecordHeaderBytes, length));
    pos += kRecordHeaderBytes + length;
    if (handshake.size() < kHandshakeHeaderBytes) continue;
    Reader message(handshake);
    if (message.number(1) != kClientHello) return malformed("a first handshake message other than ClientHello");
    std::size_t body = message.number(3);
    if (kHandshakeHeaderBytes + body > kMaxClientHelloBytes) return malformed("a ClientHello larger than 16 KiB");
    if (message.left() < body) continue;
    if (message.left() > body) return malformed("bytes after the ClientHello in its record");
    return parse_client_hello(message.bytes(body));
  }
}

}  // namespace tnk::net
