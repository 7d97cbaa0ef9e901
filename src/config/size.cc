#include "config/size.h"

#include <array>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>

namespace tnk {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr size_t kMaxFractionDigits = 6;  // 10^6 * 2^40 still fits in 64 bits

std::optional<uint64_t> unit_multiplier(std::string_view unit) {
  std::string lower;
  for (char c : unit) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.empty()) return uint64_t{1} << 30;  // bare number: GiB
  if (lower == "b") return uint64_t{1};
  static constexpr std::array<std::pair<char, int>, 4> kUnits = {{{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}}};
  for (auto [letter, shift] : kUnits) {
    if (lower[0] != letter) continue;
    std::string_view tail = std::string_view(lower).substr(1);
    if (tail.empty() || tail == "b" || tail == "ib") return uint64_t{1} << shift;
  }
  return std::nullopt;
}

std::string_view take_digits(std::string_view& text) {
  size_t n = 0;
  while (n < text.size() && std::isdigit(static_cast<unsigned char>(text[n])) != 0) ++n;
  std::string_view digits = text.substr(0, n);
  text.remove_prefix(n);
  return digits;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) text.remove_suffix(1);
  return text;
}

// whole * unit + 0.fraction * unit, rounded down; nullopt on overflow.
std::optional<uint64_t> combine(std::string_view whole, std::string_view fraction, uint64_t unit) {
  uint64_t value = 0;
  for (char c : whole) {
    auto digit = static_cast<uint64_t>(c - '0');
    if (value > (kMax - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (value > kMax / unit) return std::nullopt;
  value *= unit;
  fraction = fraction.substr(0, std::min(fraction.size(), kMaxFractionDigits));
  uint64_t numerator = 0;
  uint64_t denominator = 1;
  for (char c : fraction) {
    numerator = numerator * 10 + static_cast<uint64_t>(c - '0');
    denominator *= 10;
  }
  uint64_t extra = numerator * unit / denominator;
  if (value > kMax - extra) return std::nullopt;
  return value + extra;
}

}  // namespace

Result<uint64_t> parse_size(std::string_view text) {
  auto bad = [&] {
    return failed("invalid size '" + std::string(text) + "'",
                  "write a size such as 2GiB, 512MiB or 1.5GiB (a bare number means GiB)");
  };
  std::string_view rest = trim(text);
  std::string_view whole = take_digits(rest);
  if (whole.empty()) return bad();
  std::string_view fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    fraction = take_digits(rest);
    if (fraction.empty()) return bad();
  }
  auto unit = unit_multiplier(trim(rest));
  if (!unit) return bad();
  auto value = combine(whole, fraction, *unit);
  if (!value) return failed("size '" + std::string(text) + "' is too large", "use a size below 16EiB");
  return *value;
}

std::string format_size(uint64_t bytes) {
  static constexpr std::array<std::pair<int, const char*>, 4> kUnits = {
      {{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}};
  if (bytes == 0) return "0B";
  for (auto [shift, name] : kUnits) {
    uint64_t unit = uint64_t{1} << shift;
    if (bytes % unit == 0) return std::to_string(bytes / unit) + name;
  }
  return std::to_string(bytes) + "B";
}

}  // namespace tnk
