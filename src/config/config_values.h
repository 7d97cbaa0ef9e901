// Validators shared by tnk.toml values and TNK_* variables: text in, the typed value out, or nullopt
// when the text is not acceptable. Internal to config/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "net/policy.h"

namespace tnk::config {

std::optional<uint16_t> parse_port(std::string_view text);  // 1..65535
std::optional<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max);
std::optional<std::string> parse_path_text(std::string_view text);  // non-empty, printable
// Non-empty and absolute once ~/$HOME is expanded against `home`.
std::optional<std::string> parse_absolute_dir(std::string_view text, const std::filesystem::path& home);
std::optional<std::string> parse_runtime_name(std::string_view text);   // [A-Za-z0-9_-]+
std::optional<std::string> parse_profile_name(std::string_view text);   // [A-Za-z0-9_][A-Za-z0-9_.-]*
std::optional<std::string> parse_bind_host(std::string_view text);      // name or IP, no spaces
std::optional<std::string> parse_backend_name(std::string_view text);   // auto | vm | ns | lima | k8s
std::optional<std::string> parse_inference_url(std::string_view text);  // http(s)://host[:port][/path]
std::optional<std::string> parse_model_name(std::string_view text);     // non-empty, printable
std::optional<NetworkPolicy> parse_network(std::string_view text);
std::optional<std::string> parse_env_name(std::string_view text);  // [A-Za-z_][A-Za-z0-9_]*
std::optional<bool> parse_bool_text(std::string_view text);        // 1 0 true false
std::optional<uint64_t> parse_size_text(std::string_view text);    // parse_size, > 0
// Kubernetes names ([k8s]): a DNS-1123 label (a namespace: [a-z0-9-], at most 63, alphanumeric at both
// ends) or subdomain (a runtime or storage class: labels joined by '.', at most 253).
std::optional<std::string> parse_k8s_label(std::string_view text);
std::optional<std::string> parse_k8s_subdomain(std::string_view text);
// An image registry and path to push to and pull from, without a scheme: "registry.example.com/team".
std::optional<std::string> parse_image_registry(std::string_view text);

inline constexpr uint64_t kMaxCpus = 1024;

// An http(s) URL taken apart. `host` has no IPv6 brackets; `port` is empty when the URL has none.
struct UrlParts {
  std::string scheme;    // "http" or "https", lower case
  std::string userinfo;  // "user:pass" or empty
  std::string host;
  std::string port;
  std::string rest;  // path, query and fragment, as written ("" or "/v1")
};
std::optional<UrlParts> split_url(std::string_view text);

// A host as it appears in a URL: IPv6 addresses get brackets.
std::string url_host(std::string_view host);

// A value quoted in a warning, with control characters replaced so it cannot rewrite the terminal.
std::string printable(std::string_view text);

}  // namespace tnk::config
