#include "backend/k8s/names.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "naming/naming.h"

namespace tnk::k8s {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::string hex8(std::string_view text) {
  char buffer[9];
  std::snprintf(buffer, sizeof buffer, "%08x", static_cast<unsigned>(naming::fnv1a64(text) & 0xffffffffu));
  return buffer;
}

// `text` in lower case, every character outside [a-z0-9] as '-', runs of '-' as one, none at the ends.
std::string dns_form(std::string_view text) {
  std::string out;
  for (char c : text) {
    char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (is_lower_alnum(lower)) {
      out += lower;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// `text` as a DNS label of at most `max` characters: its dns_form when that is `text` itself and fits,
// else the form cut to leave room for "-<8 hex>" of `text`.
std::string bounded_label(std::string_view text, size_t max) {
  std::string form = dns_form(text);
  if (form == text && !form.empty() && form.size() <= max) return form;
  form.resize(std::min(form.size(), max - 9));
  while (!form.empty() && form.back() == '-') form.pop_back();
  return (form.empty() ? "x" : form) + "-" + hex8(text);
}

}  // namespace

std::string object_name(std::string_view id) { return bounded_label(id, kMaxDnsLabel - kMaxNameSuffix); }

std::string template_name(std::string_view profile, std::string_view fingerprint) {
  std::string tag = fingerprint.empty() ? "none" : std::string(fingerprint.substr(0, 12));
  return "tnk-" + bounded_label(profile, kMaxDnsLabel - kMaxNameSuffix - 4 - 1 - tag.size()) + "-" + tag;
}

std::string label_value(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') out += c;
  }
  if (out.size() > kMaxDnsLabel) out.resize(kMaxDnsLabel);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

std::string secret_key(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '-';
  }
  return out;
}

std::string quantity(uint64_t bytes) {
  constexpr const char* kUnits[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 6; ++i) {
    uint64_t unit = uint64_t{1} << (10 * (6 - i));
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + kUnits[i];
  }
  return std::to_string(bytes);
}

std::string service_host_variable(std::string_view service) {
  std::string out;
  for (char c : service) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out + "_SERVICE_HOST";
}

}  // namespace tnk::k8s
