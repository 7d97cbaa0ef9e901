// A Context over a temporary HOME and XDG tree, shared by the sandbox unit tests: the bundled specs
// copied into the config dir, tnk.toml pointing at an inference endpoint that refuses at once
// (127.0.0.1:9), and a project ~/code/demo with a subdirectory, the cwd by default.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "audit_test_util.h"
#include "context/context.h"
#include "core/files.h"
#include "sandbox/resolve.h"
#include "state/store.h"
#include "temp_dir.h"

namespace tnk::testing_sandbox {

namespace fs = std::filesystem;

// Refused at once: no test waits on a server by accident.
inline constexpr const char* kRefusingEndpoint = "http://127.0.0.1:9/v1";

// The records of an audit log, parsed, in file order.
inline std::vector<nlohmann::json> audit_records(const fs::path& log) {
  std::vector<nlohmann::json> records;
  for (const auto& line : audit::testing::split_lines(audit::testing::slurp(log))) {
    records.push_back(nlohmann::json::parse(line));
  }
  return records;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::canonical(tmp_.path());
    fs::create_directories(project_dir() / "sub" / "deeper");
    env_.set("HOME", home().string());
    env_.set("XDG_CONFIG_HOME", (root_ / "xdg").string());
    env_.set("XDG_STATE_HOME", (root_ / "state").string());
    env_.set("XDG_CACHE_HOME", (root_ / "cache").string());
    auto paths = Paths::resolve(env_);
    ASSERT_TRUE(paths.ok());
    paths_ = *paths;
    fs::create_directories(paths_.config_dir);
    fs::copy(TNK_SOURCE_SPECS_DIR, paths_.config_dir, fs::copy_options::recursive);
    write_config("");
    ctx_.emplace(env_, paths_, log_, output_, project_dir(), "/usr/bin/tnk", Terminal{});
  }

  // tnk.toml: `extra` after the endpoint line. Call before the first ctx().config() (it loads once).
  void write_config(const std::string& extra) {
    ASSERT_TRUE(
        write_file_atomic(paths_.config_file(), "inference_url = \"" + std::string(kRefusingEndpoint) + "\"\n" + extra)
            .ok());
  }

  // A file below the config dir (the specs tree), replaced.
  void write_spec(const fs::path& relative, const std::string& text) {
    fs::create_directories((paths_.config_dir / relative).parent_path());
    ASSERT_TRUE(write_file_atomic(paths_.config_dir / relative, text).ok());
  }

  // The sandbox record of a sandbox that already exists for the demo project.
  void save_record(BackendKind backend, const std::string& profile, const std::string& fingerprint = "") {
    state::SandboxRecord record;
    record.id = "tnk-demo";
    record.backend = backend;
    record.project_dir = project_dir();
    record.profile = profile;
    record.mount_point = "/workspace";
    record.provision_fingerprint = fingerprint;
    record.created_at = 1700000000;
    ASSERT_TRUE(state::Store(paths_.sandboxes_dir()).save(record).ok());
  }

  // As a sandbox that does not run resolves: its endpoint asked, not what a start kept.
  Result<sandbox::Resolved> resolve(const sandbox::ResolveOptions& options = {}) {
    TNK_ASSIGN_OR_RETURN(sandbox::Resolved r, sandbox::resolve(ctx(), options));
    TNK_RETURN_IF_ERROR(sandbox::settle_endpoint(ctx(), r, std::nullopt));
    return r;
  }
  sandbox::Resolved resolve_ok(const sandbox::ResolveOptions& options = {}) {
    auto r = resolve(options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : sandbox::Resolved{};
  }

  Context& ctx() { return *ctx_; }
  fs::path home() const { return root_ / "home"; }
  fs::path code() const { return home() / "code"; }
  fs::path project_dir() const { return code() / "demo"; }
  std::string err() const { return err_.str(); }

  testing_support::TempDir tmp_{"tnk-sbx"};
  fs::path root_;
  Env env_;
  Paths paths_;
  std::ostringstream out_, err_;
  Log log_{err_};
  Output output_{out_, err_, OutputFormat::kText, false};
  std::optional<Context> ctx_;
};

}  // namespace tnk::testing_sandbox
