#include "naming/backend_kind.h"

#include <string>

namespace tnk {

std::optional<BackendKind> parse_backend_kind(std::string_view name) {
  for (BackendKind kind :
       {BackendKind::kAuto, BackendKind::kVm, BackendKind::kNs, BackendKind::kLima, BackendKind::kK8s}) {
    if (name == to_string(kind)) return kind;
  }
  return std::nullopt;
}

Result<BackendKind> backend_kind(std::string_view name) {
  if (auto kind = parse_backend_kind(name)) return *kind;
  std::string hint = "use one of: ";
  hint += kBackendNames;  // (not `std::string(...) + kBackendNames`: GCC 12 warns wrongly on it, its bug 105651)
  return usage_error("unknown backend '" + std::string(name) + "'", hint);
}

const char* to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto: return "auto";
    case BackendKind::kVm: return "vm";
    case BackendKind::kNs: return "ns";
    case BackendKind::kLima: return "lima";
    case BackendKind::kK8s: return "k8s";
  }
  return "auto";
}

}  // namespace tnk
