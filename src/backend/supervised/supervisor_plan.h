// What a supervised start (ns, vm) hands its supervisor, as a pure function: the sandbox the command
// line resolved, its record, tnk.toml, and what the caller read from the host before (the image, the
// vm's boot files, the gateway's key, the routes' credentials, the registries behind network.allow,
// review mode). Nothing here reads a file, the environment or a clock, so golden tests hold the whole
// configuration (tests/unit/backend/supervised/supervisor_plan_test.cc), as they hold the vm plan.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/result.h"
#include "net/credential_route.h"
#include "net/live_policy.h"
#include "sandbox/resolve.h"
#include "state/record.h"
#include "supervisor/config.h"

namespace tnk::supervised {

// A vm's boot files (vm/boot/boot_files.h) and the accelerator the host offers.
struct VmBoot {
  std::filesystem::path kernel;
  std::filesystem::path base_disk;
  bool kvm = false;
};

// What the caller read before planning.
struct SupervisorInputs {
  std::filesystem::path state_dir;           // the sandbox's state directory
  std::filesystem::path image_root;          // the image tree (ns: the overlay's lower layer)
  std::filesystem::path audit_log;           // network records besides the sessions' own; empty: none
  supervisor::InferenceGateway gateway;      // with the key, read at this start
  std::vector<net::CredentialRoute> routes;  // tnk.toml's [[routes]], credentials read at this start
  std::vector<std::string> allow;            // network.allow, registries expanded (`allowlist` only)
  std::vector<net::LiveRule> live_rules;     // `tnk sandbox allow`/`deny`'s rules in force (sandbox/live_rules.h)
  std::filesystem::path ssh_agent;           // the starting command's SSH_AUTH_SOCK, for [[ssh_routes]]
  bool review = false;                       // review mode, as choose_review decided
  std::optional<VmBoot> vm;                  // set for a vm sandbox
};

struct SupervisorPlan {
  supervisor::SupervisorConfig config;
  std::vector<std::string> notes;  // worth telling the user ("an empty network.allow: only the endpoint")
};

// Errors: an endpoint URL that does not parse, and a profile's git_routes naming a route tnk.toml lacks.
Result<SupervisorPlan> plan_supervisor(const sandbox::Resolved& r, const state::SandboxRecord& record,
                                       const Config& config, SupervisorInputs in);

}  // namespace tnk::supervised
