// A provisioning run's output, line by line: each line shown on stderr through terminal_safe (the
// script runs in the sandbox, so its bytes may carry control sequences: security review L7) and
// written to the audit log (provision_output), the failure line of the runner kept for the error
// message; then the run's end (provision_end, the error or the saved fingerprint). Shared by every
// backend's provisioning.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "audit/writer.h"
#include "context/context.h"
#include "sandbox/provision.h"
#include "sandbox/resolve.h"

namespace tnk::sandbox {

class ProvisionOutput {
 public:
  // The longest line kept whole: longer output without a newline is recorded in pieces of this size.
  static constexpr std::size_t kMaxLineBytes = 16 * 1024;

  // Made when the run starts (its duration counts from here).
  ProvisionOutput(Context& ctx, std::optional<audit::AuditWriter>& audit, const Resolved& r)
      : ctx_(ctx), audit_(audit), r_(r), started_(std::chrono::steady_clock::now()) {}

  void add(int stream, std::string_view bytes);  // stream: 1 stdout, 2 stderr

  // The run ended with `code` (or could not run): the last lines, provision_end, and either the error
  // naming the failing line or the fingerprint saved in the sandbox's record.
  Status finish(const Result<int>& code, const ProvisionFingerprint& fingerprint);

 private:
  void flush();  // the last lines without a newline
  void line(int stream, const std::string& text);

  Context& ctx_;
  std::optional<audit::AuditWriter>& audit_;
  const Resolved& r_;
  std::chrono::steady_clock::time_point started_;
  std::map<int, std::string> pending_;
  std::string failure_;
  bool sudo_refused_ = false;  // sudo said no_new_privs stops it: a script written for one phase
};

}  // namespace tnk::sandbox
