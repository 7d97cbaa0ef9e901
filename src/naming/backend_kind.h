// The backends by name: the one place that turns "auto", "vm", "ns", "lima" and "k8s" (from tnk.toml,
// TNK_DEFAULT_BACKEND, --backend and sandbox.json) into a BackendKind and back. Everything else
// compares kinds, never strings.
#pragma once

#include <optional>
#include <string_view>

#include "core/result.h"

namespace tnk {

enum class BackendKind { kAuto, kVm, kNs, kLima, kK8s };

inline constexpr const char* kBackendNames = "auto, vm, ns, lima, k8s";

std::optional<BackendKind> parse_backend_kind(std::string_view name);
// The same, with a usage error that names the choices.
Result<BackendKind> backend_kind(std::string_view name);
const char* to_string(BackendKind kind);

}  // namespace tnk
