#include "backend/backend.h"

namespace tnk::backend {

Status validate_backend_name(std::string_view name) {
  if (name == "auto" || name == "vm" || name == "ns" || name == "lima") return ok_status();
  return usage_error("unknown backend '" + std::string(name) + "'", std::string("use one of: ") + kBackendNames);
}

Result<std::unique_ptr<Backend>> open_backend(std::string_view name) {
  TNK_RETURN_IF_ERROR(validate_backend_name(name));
  // No backend is compiled into this build yet: say so plainly instead of pretending.
  return failed("the '" + std::string(name) + "' backend is not available in this build of tnk (" TNK_VERSION ")",
                "this build can inspect and configure sandboxes (`tnk sandbox inspect`, `tnk doctor`) "
                "but cannot run them yet");
}

}  // namespace tnk::backend
