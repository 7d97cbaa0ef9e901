#include "sandbox/provision_output.h"

#include <ostream>

#include "audit/events.h"
#include "sandbox/audit_target.h"

namespace tnk::sandbox {

void ProvisionOutput::add(int stream, std::string_view bytes) {
  if (echo_) ctx_.log.stream() << bytes << std::flush;
  std::string& pending = pending_[stream];
  pending.append(bytes);
  for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
    line(stream, pending.substr(0, nl));
    pending.erase(0, nl + 1);
  }
}

void ProvisionOutput::flush() {
  for (auto& [stream, rest] : pending_) {
    if (!rest.empty()) line(stream, rest);
    rest.clear();
  }
}

void ProvisionOutput::line(int stream, const std::string& text) {
  if (text.starts_with("tnk: provisioning failed at ")) failure_ = text.substr(5);
  audit_append(ctx_, audit_, audit::provision_output(r_.id, r_.profile, stream == 2 ? "stderr" : "stdout", text));
}

}  // namespace tnk::sandbox
