// The audit event builders: names and fields are pinned (docs/audit-format.md).
#include <gtest/gtest.h>

#include "audit/events.h"

namespace tnk::audit {
namespace {

using nlohmann::json;

const RuntimeEnv kRuntime = {{"TNK_INFERENCE_URL", "http://10.0.2.2:8080/v1"}, {"TNK_MODEL_NAME", "qwen"}};

TEST(AuditEventsTest, SessionStart) {
  EXPECT_EQ(session_start("tnk-p", "/workspace/p", false, true, kRuntime), json::parse(R"({
    "event": "session_start", "container_id": "tnk-p", "workdir": "/workspace/p", "tty": false,
    "requires_tty": true,
    "runtime_env": {"TNK_INFERENCE_URL": "http://10.0.2.2:8080/v1", "TNK_MODEL_NAME": "qwen"}})"));
}

TEST(AuditEventsTest, ExecInvocation) {
  EXPECT_EQ(exec_invocation("tnk-p", {"bash", "-lc", "make test"}, true, kRuntime, {"API_KEY"}), json::parse(R"({
    "event": "exec_invocation", "container_id": "tnk-p", "argv": ["bash", "-lc", "make test"], "tty": true,
    "runtime_env": {"TNK_INFERENCE_URL": "http://10.0.2.2:8080/v1", "TNK_MODEL_NAME": "qwen"},
    "user_env_names": ["API_KEY"]})"));
  EXPECT_EQ(exec_invocation("tnk-p", {"bash"}, false, {}, {})["user_env_names"], json::array());
  EXPECT_EQ(exec_invocation("tnk-p", {"bash"}, false, {}, {})["runtime_env"], json::object());
}

TEST(AuditEventsTest, SessionExit) {
  EXPECT_EQ(session_exit("tnk-p", 3, std::nullopt),
            json::parse(R"({"event": "session_exit", "container_id": "tnk-p", "exit_code": 3})"));
  EXPECT_EQ(session_exit("tnk-p", std::nullopt, 9),
            json::parse(R"({"event": "session_exit", "container_id": "tnk-p", "exit_code": null, "signal": 9})"));
  EXPECT_EQ(session_exit("tnk-p", std::nullopt, std::nullopt),
            json::parse(R"({"event": "session_exit", "container_id": "tnk-p", "exit_code": null})"));
}

TEST(AuditEventsTest, SandboxLifecycle) {
  EXPECT_EQ(sandbox_start("tnk-p", "vm", "base", "/home/u/src/p"), json::parse(R"({
    "event": "sandbox_start", "container_id": "tnk-p", "backend": "vm", "profile": "base",
    "project_dir": "/home/u/src/p"})"));
  EXPECT_EQ(sandbox_stop("tnk-p", "user"),
            json::parse(R"({"event": "sandbox_stop", "container_id": "tnk-p", "reason": "user"})"));
  EXPECT_EQ(sandbox_delete("tnk-p"), json::parse(R"({"event": "sandbox_delete", "container_id": "tnk-p"})"));
}

TEST(AuditEventsTest, Provisioning) {
  EXPECT_EQ(provision_start("tnk-p", "pi", "ab12"), json::parse(R"({
    "event": "provision_start", "container_id": "tnk-p", "profile": "pi", "fingerprint": "ab12"})"));
  EXPECT_EQ(provision_end("tnk-p", "pi", 0, 81234), json::parse(R"({
    "event": "provision_end", "container_id": "tnk-p", "profile": "pi", "exit_code": 0,
    "duration_ms": 81234})"));
}

TEST(AuditEventsTest, Network) {
  NetRecord allowed{"deb.example.org", "203.0.113.5", 80, "allowlist", "*.example.org", "closed", 310, 92817};
  EXPECT_EQ(net_allow("tnk-p", allowed), json::parse(R"({
    "event": "net_allow", "container_id": "tnk-p", "destination": "deb.example.org", "address": "203.0.113.5",
    "port": 80, "policy": "allowlist", "rule": "*.example.org", "end": "closed", "bytes_up": 310,
    "bytes_down": 92817})"));
  NetRecord denied{"evil.example", "", 443, "allowlist", "", "not in allow-list", 0, 0};
  EXPECT_EQ(net_deny("tnk-p", denied), json::parse(R"({
    "event": "net_deny", "container_id": "tnk-p", "destination": "evil.example", "address": "", "port": 443,
    "policy": "allowlist", "rule": "", "reason": "not in allow-list"})"));
}

}  // namespace
}  // namespace tnk::audit
