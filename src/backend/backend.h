// The Backend interface every sandbox engine implements (vm, ns, lima), and the registry that
// opens one by name. All backends keep one contract: ARCHITECTURE.md, "The contract every backend keeps".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::backend {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
};

inline constexpr const char* kBackendNames = "auto, vm, ns, lima";
Status validate_backend_name(std::string_view name);

// Opens a concrete backend (not "auto": resolve it first). Fails with an error naming what is
// missing when this build has no such backend or the host cannot run it.
Result<std::unique_ptr<Backend>> open_backend(std::string_view name);

}  // namespace tnk::backend
