#include "review/git_blob.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

namespace tnk::review {
namespace {

constexpr uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// SHA-1 (FIPS 180-4), as git names objects with it. Not a security property here: git apply only
// compares it with the file it patches.
class Sha1 {
 public:
  void add(std::string_view data) {
    for (char c : data) {
      block_[fill_++] = static_cast<unsigned char>(c);
      if (fill_ == 64) compress();
    }
    bits_ += static_cast<uint64_t>(data.size()) * 8;
  }

  std::string hex() {
    uint64_t bits = bits_;
    block_[fill_++] = 0x80;
    if (fill_ > 56) {
      while (fill_ < 64) block_[fill_++] = 0;
      compress();
    }
    while (fill_ < 56) block_[fill_++] = 0;
    for (int i = 7; i >= 0; --i) block_[fill_++] = static_cast<unsigned char>(bits >> (8 * i));
    compress();
    std::string out;
    char buf[9];
    for (uint32_t word : h_) {
      std::snprintf(buf, sizeof buf, "%08x", word);
      out += buf;
    }
    return out;
  }

 private:
  void compress() {
    std::array<uint32_t, 80> w{};
    for (size_t i = 0; i < 16; ++i) {
      w[i] = static_cast<uint32_t>(block_[4 * i]) << 24 | static_cast<uint32_t>(block_[4 * i + 1]) << 16 |
             static_cast<uint32_t>(block_[4 * i + 2]) << 8 | static_cast<uint32_t>(block_[4 * i + 3]);
    }
    for (size_t i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (size_t i = 0; i < 80; ++i) {
      uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d), k = 0x5a827999;
      } else if (i < 40) {
        f = b ^ c ^ d, k = 0x6ed9eba1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
      } else {
        f = b ^ c ^ d, k = 0xca62c1d6;
      }
      uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d, d = c, c = rotl(b, 30), b = a, a = t;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
    fill_ = 0;
  }

  std::array<uint32_t, 5> h_ = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  std::array<unsigned char, 64> block_{};
  size_t fill_ = 0;
  uint64_t bits_ = 0;
};

// A zlib stream of stored (uncompressed) deflate blocks: what git apply inflates; compressing would
// only make the patch smaller.
std::string zlib_stored(std::string_view data) {
  std::string out = "\x78\x01";
  size_t at = 0;
  do {
    size_t len = std::min<size_t>(data.size() - at, 65535);
    bool last = at + len == data.size();
    out += static_cast<char>(last ? 1 : 0);
    out += static_cast<char>(len & 0xff);
    out += static_cast<char>(len >> 8);
    out += static_cast<char>(~len & 0xff);
    out += static_cast<char>((~len >> 8) & 0xff);
    out.append(data.substr(at, len));
    at += len;
  } while (at < data.size());
  uint32_t s1 = 1, s2 = 0;  // Adler-32
  for (char c : data) {
    s1 = (s1 + static_cast<unsigned char>(c)) % 65521;
    s2 = (s2 + s1) % 65521;
  }
  uint32_t adler = s2 << 16 | s1;
  for (int i = 3; i >= 0; --i) out += static_cast<char>(adler >> (8 * i));
  return out;
}

constexpr std::string_view kBase85 =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

// One line of git's base85: a length letter (A-Z: 1-26, a-z: 27-52), then 5 characters per 4 bytes.
std::string base85_line(std::string_view chunk) {
  std::string line(
      1, chunk.size() <= 26 ? static_cast<char>('A' + chunk.size() - 1) : static_cast<char>('a' + chunk.size() - 27));
  for (size_t i = 0; i < chunk.size(); i += 4) {
    uint32_t acc = 0;
    for (size_t j = 0; j < 4; ++j) {
      acc = acc << 8 | (i + j < chunk.size() ? static_cast<unsigned char>(chunk[i + j]) : 0u);
    }
    char group[5];
    for (int j = 4; j >= 0; --j) {
      group[j] = kBase85[acc % 85];
      acc /= 85;
    }
    line.append(group, 5);
  }
  return line + "\n";
}

}  // namespace

std::string git_blob_id(std::string_view content) {
  Sha1 sha;
  sha.add("blob " + std::to_string(content.size()));
  sha.add(std::string_view("\0", 1));
  sha.add(content);
  return sha.hex();
}

std::string git_binary_literal(std::string_view content) {
  std::string packed = zlib_stored(content);
  std::string out = "literal " + std::to_string(content.size()) + "\n";
  for (size_t at = 0; at < packed.size(); at += 52) out += base85_line(std::string_view(packed).substr(at, 52));
  return out + "\n";
}

bool looks_binary(std::string_view content) { return content.substr(0, 8000).find('\0') != std::string_view::npos; }

}  // namespace tnk::review
