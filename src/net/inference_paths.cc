#include "net/inference_paths.h"

#include <string_view>

#include "net/path_check.h"

namespace tnk::net {
namespace {

struct Route {
  std::string_view method;
  std::string_view path;
};

// The list of docs/inference.md ("What the sandbox can ask the endpoint"); keep the two in step.
constexpr Route kRoutes[] = {
    {"GET", "/"},
    {"GET", "/health"},
    {"GET", "/healthz"},
    {"GET", "/v1/models"},
    {"POST", "/v1/chat/completions"},
    {"POST", "/v1/completions"},
    {"POST", "/v1/embeddings"},
    {"POST", "/v1/responses"},
    {"POST", "/v1/messages"},
    {"POST", "/api/chat"},
    {"POST", "/api/generate"},
    {"POST", "/api/embed"},
    {"POST", "/api/embeddings"},
    {"POST", "/api/show"},
    {"GET", "/api/tags"},
    {"GET", "/api/version"},
};
constexpr std::string_view kModelPrefix = "/v1/models/";  // GET /v1/models/<id>; ids may hold '/' and ':'

bool listed(std::string_view method, std::string_view path) {
  // HEAD is GET without the body: a health check may use either.
  std::string_view as = method == "HEAD" ? "GET" : method;
  for (const Route& route : kRoutes) {
    if (route.method == as && route.path == path) return true;
  }
  return as == "GET" && path.starts_with(kModelPrefix) && path.size() > kModelPrefix.size();
}

bool asks_upgrade(const RequestHead& head) {
  for (const auto& [name, value] : head.headers) {
    if (ascii_lower(name) == "upgrade") return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> inference_refusal(const RequestHead& head) {
  std::string_view target = head.path;
  std::string_view path = target.substr(0, target.find('?'));
  std::string what = head.method + " " + std::string(path);
  if (auto refusal = path_refusal(path)) return what + ": " + *refusal;
  if (!listed(head.method, path)) return what + " is not an inference API";
  // After a 101 the connection carries another protocol, which nothing here could check.
  if (asks_upgrade(head)) return what + ": protocol upgrades (Upgrade:) are not relayed";
  return std::nullopt;
}

}  // namespace tnk::net
