#include "backend/supervised/engines.h"

#include "backend/ns/engine.h"
#include "backend/vm/engine.h"

namespace tnk::supervised {

Result<std::unique_ptr<supervisor::Engine>> make_engine(const supervisor::SupervisorConfig& config) {
  switch (config.backend) {
    case BackendKind::kNs: return ns::make_ns_engine(config);
    case BackendKind::kVm: return vm::make_vm_engine(config);
    case BackendKind::kAuto:
    case BackendKind::kLima:
    case BackendKind::kK8s: break;
  }
  return failed(std::string("the supervisor cannot run a '") + to_string(config.backend) + "' sandbox");
}

}  // namespace tnk::supervised
