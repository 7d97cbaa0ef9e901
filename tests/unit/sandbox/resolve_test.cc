// sandbox::resolve (src/sandbox/resolve.h): project and id from the cwd, profile, backend and network
// with their sources, the runtime variables, and the JSON `tnk sandbox inspect -n` prints.
#include "core/files.h"
#include "host/host_probe.h"
#include "naming/naming.h"
#include "sandbox/started_with.h"
#include "sandbox_test_util.h"
#include "specs/revision.h"
#include "state/store.h"

namespace tnk::testing_sandbox {
namespace {

using sandbox::ResolveOptions;

ResolveOptions with_profile(const std::string& profile) {
  ResolveOptions o;
  o.profile = profile;
  return o;
}
ResolveOptions with_backend(const std::string& backend) {
  ResolveOptions o;
  o.backend = backend;
  return o;
}

// --- project and id ----------------------------------------------------------------------------------

TEST_F(SandboxTest, ResolveProjectIsFirstDirectoryBelowWorkspaceRoot) {
  ctx().cwd = project_dir() / "sub" / "deeper";
  auto r = resolve_ok();
  EXPECT_EQ(r.project.name, "demo");
  EXPECT_EQ(r.project.root, code());
  EXPECT_EQ(r.project.dir, project_dir());
  EXPECT_EQ(r.project.relative_cwd, fs::path("sub/deeper"));
  EXPECT_EQ(r.guest_workdir, "/workspace/sub/deeper");
  EXPECT_EQ(r.id, "tnk-demo");
}

TEST_F(SandboxTest, ResolveAtProjectTopWorksInMountPoint) {
  auto r = resolve_ok();
  EXPECT_EQ(r.project.relative_cwd, fs::path());
  EXPECT_EQ(r.guest_workdir, "/workspace");
}

TEST_F(SandboxTest, ResolveCwdOutsideWorkspaceRootIsUsageError) {
  ctx().cwd = home();
  auto r = resolve();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(r.error().message, "current directory is outside the configured workspace root (" + code().string() + ")");
}

TEST_F(SandboxTest, ResolveCwdAtWorkspaceRootAsksForAProject) {
  ctx().cwd = code();
  auto r = resolve();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(r.error().message, "navigate into a project directory first");
  EXPECT_EQ(r.error().hint, "cd " + code().string() + "/<project>");
}

TEST_F(SandboxTest, ResolveIdOfAnUncleanProjectNameCarriesAHash) {
  fs::create_directories(code() / "My Project");
  ctx().cwd = code() / "My Project";
  auto r = resolve_ok();
  EXPECT_EQ(r.project.name, "My Project");
  auto expected = naming::sandbox_id("My Project", naming::max_sandbox_id_length(paths_.sandboxes_dir()));
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(r.id, *expected);
  EXPECT_NE(r.id, "tnk-My Project");
  EXPECT_TRUE(r.id.starts_with("tnk-")) << r.id;
}

TEST_F(SandboxTest, ResolveRefusesARecordOfAnotherProject) {
  save_record(BackendKind::kNs, "base");
  fs::create_directories(code() / "other");
  state::Store store(paths_.sandboxes_dir());
  auto record = store.load("tnk-demo");
  ASSERT_TRUE(record.ok() && *record);
  (*record)->project_dir = code() / "other";
  ASSERT_TRUE(store.save(**record).ok());
  auto r = resolve();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kFailed);
  EXPECT_EQ(r.error().message,
            "sandbox tnk-demo belongs to " + (code() / "other").string() + ", not " + project_dir().string());
}

TEST_F(SandboxTest, ResolveFindsTheRecordOfItsOwnProject) {
  save_record(BackendKind::kNs, "dev");
  auto r = resolve_ok();
  ASSERT_TRUE(r.record);
  EXPECT_EQ(r.record->profile, "dev");
}

// --- profile -----------------------------------------------------------------------------------------

TEST_F(SandboxTest, ResolveProfileFromFlag) {
  auto r = resolve_ok(with_profile("dev"));
  EXPECT_EQ(r.profile, "dev");
  EXPECT_EQ(r.profile_source, "--profile");
  EXPECT_EQ(r.provision_script, paths_.config_dir / "sandbox.d/provision.d/dev.sh");
  EXPECT_EQ(r.manifest_file, paths_.config_dir / "sandbox.d/manifests/dev.yaml");
}

TEST_F(SandboxTest, ResolveUnknownProfileFlagListsTheInstalledOnes) {
  auto r = resolve(with_profile("nosuch"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(r.error().message, "unknown profile 'nosuch'");
  EXPECT_EQ(r.error().hint, "available profiles: base, dev, pi (`tnk init` installs the bundled ones)");
}

TEST_F(SandboxTest, ResolveProfileFlagIsValidatedBeforeUse) {
  auto r = resolve(with_profile("../x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
}

TEST_F(SandboxTest, ResolveProfileFlagWinsOverRecord) {
  save_record(BackendKind::kNs, "dev");
  EXPECT_EQ(resolve_ok(with_profile("base")).profile_source, "--profile");
  auto r = resolve_ok();
  EXPECT_EQ(r.profile, "dev");
  EXPECT_EQ(r.profile_source, "sandbox record");
}

TEST_F(SandboxTest, ResolveProfileFromConfig) {
  write_config("default_provision_profile = \"dev\"\n");
  auto r = resolve_ok();
  EXPECT_EQ(r.profile, "dev");
  EXPECT_EQ(r.profile_source, "config");
  for (const auto& note : r.notes) EXPECT_EQ(note.find("default profile"), std::string::npos) << note;
}

TEST_F(SandboxTest, ResolveDefaultProfileIsPiFromConfigDefaults) {
  auto r = resolve_ok();
  EXPECT_EQ(r.profile, "pi");
  EXPECT_EQ(r.profile_source, "config");
}

TEST_F(SandboxTest, ResolveMissingConfiguredProfileFallsBackToBaseWithNote) {
  write_config("default_provision_profile = \"gone\"\n");
  auto r = resolve_ok();
  EXPECT_EQ(r.profile, "base");
  EXPECT_EQ(r.profile_source, "fallback");
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes.front(), "default profile 'gone' is not installed, using 'base' (run `tnk init` to install it)");
  EXPECT_FALSE(r.provision_script);
}

// --- backend -----------------------------------------------------------------------------------------

TEST_F(SandboxTest, ResolveBackendFromFlag) {
  for (auto [name, kind] :
       {std::pair{"ns", BackendKind::kNs}, std::pair{"vm", BackendKind::kVm}, std::pair{"lima", BackendKind::kLima}}) {
    auto r = resolve_ok(with_backend(name));
    EXPECT_EQ(r.backend, kind) << name;
    EXPECT_EQ(r.backend_source, "--backend") << name;
    EXPECT_EQ(r.backend_why, "") << name;
  }
}

TEST_F(SandboxTest, ResolveUnknownBackendFlagIsUsageError) {
  auto r = resolve(with_backend("docker"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(r.error().message, "unknown backend 'docker'");
  EXPECT_EQ(r.error().hint, "use one of: auto, vm, ns, lima, k8s");
}

TEST_F(SandboxTest, ResolveAutoBackendIsTheHostsChoice) {
  auto expected = host::choose_auto_backend(host::gather_host_facts(env_));
  auto r = resolve_ok(with_backend("auto"));
  EXPECT_EQ(r.backend, expected.backend);
  EXPECT_EQ(r.backend_source, "auto");
  EXPECT_EQ(r.backend_why, expected.why);
  EXPECT_EQ(r.backend_weaker_note, expected.weaker_note);
  EXPECT_FALSE(r.backend_why.empty());
}

TEST_F(SandboxTest, ResolveBackendFromConfig) {
  write_config("default_backend = \"vm\"\n");
  auto r = resolve_ok();
  EXPECT_EQ(r.backend, BackendKind::kVm);
  EXPECT_EQ(r.backend_source, "config");
}

TEST_F(SandboxTest, ResolveRecordPinsTheBackendAgainstAnotherFlag) {
  save_record(BackendKind::kLima, "base");
  auto r = resolve(with_backend("ns"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(r.error().message, "sandbox tnk-demo was created with the 'lima' backend");
  EXPECT_EQ(r.error().hint, "`tnk sandbox delete` it first to recreate it with --backend ns");
}

TEST_F(SandboxTest, ResolveRecordBackendAcceptsSameFlagAutoAndConfig) {
  write_config("default_backend = \"ns\"\n");
  save_record(BackendKind::kLima, "base");
  for (const ResolveOptions& options : {with_backend("lima"), with_backend("auto"), ResolveOptions{}}) {
    auto r = resolve_ok(options);
    EXPECT_EQ(r.backend, BackendKind::kLima);
    EXPECT_EQ(r.backend_source, "sandbox record");
  }
}

// --- network -----------------------------------------------------------------------------------------

class SandboxResolveNetworkTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    write_spec("sandbox.d/manifests/quiet.yaml", "profile: quiet\n");
    write_spec("sandbox.d/manifests/loud.yaml", "profile: loud\nsecurity:\n  network: open\n");
    write_config("default_network = \"none\"\n");
  }
};

TEST_F(SandboxResolveNetworkTest, ConfigWhenTheManifestSaysNothing) {
  auto r = resolve_ok(with_profile("quiet"));
  EXPECT_EQ(r.network, NetworkPolicy::kNone);
  EXPECT_EQ(r.network_source, "config");
}

TEST_F(SandboxResolveNetworkTest, ManifestWinsOverConfig) {
  auto r = resolve_ok(with_profile("loud"));
  EXPECT_EQ(r.network, NetworkPolicy::kOpen);
  EXPECT_EQ(r.network_source, "manifest");
}

TEST_F(SandboxResolveNetworkTest, FlagWinsOverManifestAndConfig) {
  for (const char* profile : {"quiet", "loud"}) {
    auto options = with_profile(profile);
    options.network = NetworkPolicy::kAllowlist;
    auto r = resolve_ok(options);
    EXPECT_EQ(r.network, NetworkPolicy::kAllowlist) << profile;
    EXPECT_EQ(r.network_source, "--network") << profile;
  }
}

// --- runtime variables -------------------------------------------------------------------------------

TEST(SandboxRuntimeEnvNames, DocumentedOrder) {
  EXPECT_EQ(sandbox::runtime_env_names(),
            (std::vector<std::string>{"TNK_INFERENCE_URL", "TNK_OPENAI_URL", "TNK_MODEL_NAME", "TNK_ENGINE_RUNTIME",
                                      "TNK_CTX_WINDOW", "TNK_WORKSPACE_MOUNT", "TNK_SPECS_REV"}));
}

TEST_F(SandboxTest, ResolveRuntimeEnvHoldsExactlyTheDocumentedValues) {
  write_config("model_name = \"qwen-coder\"\ncontext_window = 4096\ndefault_engine_runtime = \"vllm\"\n");
  auto r = resolve_ok(with_profile("base"));  // a profile without agent settings
  std::map<std::string, std::string> expected = {
      {"TNK_INFERENCE_URL", "http://host.lima.internal:9/v1"},
      {"TNK_OPENAI_URL", "http://host.lima.internal:9/v1"},
      {"TNK_MODEL_NAME", "qwen-coder"},
      {"TNK_ENGINE_RUNTIME", "vllm"},
      {"TNK_CTX_WINDOW", "4096"},
      {"TNK_WORKSPACE_MOUNT", "/workspace"},
      {"TNK_SPECS_REV", specs::specs_revision(paths_.config_dir, paths_.memo_dir())},
  };
  EXPECT_EQ(r.runtime_env, expected);
  EXPECT_TRUE(r.runtime_env["TNK_SPECS_REV"].starts_with("sha256:")) << r.runtime_env["TNK_SPECS_REV"];
  std::vector<std::string> names;
  for (const auto& [name, value] : r.runtime_env) names.push_back(name);
  std::vector<std::string> documented = sandbox::runtime_env_names();
  std::sort(documented.begin(), documented.end());
  EXPECT_EQ(names, documented);
  EXPECT_EQ(r.host_inference_url, kRefusingEndpoint);
  EXPECT_EQ(r.model.source, "config");
  EXPECT_EQ(r.model.context_source, "config");
}

// The agent settings' URL variables join the runtime values (handed in, audited); the token variables
// do not: they are the supervisor's, and shown redacted.
TEST_F(SandboxTest, ResolveAgentSettingsAddTheirUrlsToTheRuntimeValues) {
  auto r = resolve_ok(with_profile("pi"));  // the bundled pi asks for `agent_env: [openai]`
  EXPECT_EQ(r.runtime_env["OPENAI_BASE_URL"], "http://host.lima.internal:9/v1");
  EXPECT_EQ(r.runtime_env.count("OPENAI_API_KEY"), 0u);
  EXPECT_EQ(r.agent.token_env, std::vector<std::string>{"OPENAI_API_KEY"});
  EXPECT_EQ(sandbox::agent_env_shown(r),
            (std::map<std::string, std::string>{{"OPENAI_BASE_URL", "http://host.lima.internal:9/v1"},
                                                {"OPENAI_API_KEY", "<token>"}}));
  auto j = sandbox::to_json(r);
  EXPECT_EQ(j["agent"], nlohmann::json::parse(R"({"apis": ["openai"], "env": {
      "OPENAI_BASE_URL": "http://host.lima.internal:9/v1", "OPENAI_API_KEY": "<token>"}})"));
}

TEST_F(SandboxTest, ResolveRuntimeEnvFallsBackWhenNothingIsConfigured) {
  auto r = resolve_ok();
  EXPECT_EQ(r.runtime_env["TNK_MODEL_NAME"], "default");
  EXPECT_EQ(r.runtime_env["TNK_CTX_WINDOW"], "32768");
  EXPECT_EQ(r.runtime_env["TNK_ENGINE_RUNTIME"], "llama");
  EXPECT_EQ(r.model.source, "default");
  EXPECT_EQ(r.model.context_source, "default");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], r.model.note);
  EXPECT_NE(r.notes[0].find("no model_name configured, using model 'default'"), std::string::npos) << r.notes[0];
}

// The warm path: a running sandbox's sessions are told what its start was told, without asking the
// endpoint again (the test's endpoint refuses: asking it would add its note).
TEST_F(SandboxTest, SettleEndpointUsesWhatTheStartKeptAndSaysWhenTnkTomlMovedTheEndpoint) {
  auto r = sandbox::resolve(ctx(), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  sandbox::StartedWith started;
  started.inference_url = r->host_inference_url;
  started.model.model_name = "kept-model";
  started.model.source = "server";
  started.model.context_window = 8192;
  started.model.context_source = "server";
  auto same = *r;
  ASSERT_TRUE(sandbox::settle_endpoint(ctx(), same, started).ok());
  EXPECT_EQ(same.runtime_env["TNK_MODEL_NAME"], "kept-model");
  EXPECT_EQ(same.runtime_env["TNK_CTX_WINDOW"], "8192");
  EXPECT_TRUE(same.notes.empty()) << same.notes[0];

  started.inference_url = "http://127.0.0.1:1/v1";
  auto moved = *r;
  ASSERT_TRUE(sandbox::settle_endpoint(ctx(), moved, started).ok());
  EXPECT_EQ(moved.host_inference_url, "http://127.0.0.1:1/v1");
  ASSERT_EQ(moved.notes.size(), 1u);
  EXPECT_NE(moved.notes[0].find("keeps using it until it is stopped and started again"), std::string::npos);
}

TEST_F(SandboxTest, WhatAStartKeptIsReadOnlyForThatStart) {
  state::Store store(paths_.sandboxes_dir());
  std::filesystem::create_directories(store.dir("tnk-demo"));
  sandbox::StartedWith started;
  started.started_at = 1700000100;
  started.inference_url = "http://127.0.0.1:9/v1";
  started.model.model_name = "m";
  ASSERT_TRUE(sandbox::save_started_with(store, "tnk-demo", started).ok());
  auto read = sandbox::load_started_with(store, "tnk-demo", 1700000100);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->model.model_name, "m");
  EXPECT_FALSE(sandbox::load_started_with(store, "tnk-demo", 1700000200).has_value()) << "another start's file";
  ASSERT_TRUE(write_file_atomic(store.file("tnk-demo", sandbox::kStartedWithFile), "{not json").ok());
  EXPECT_FALSE(sandbox::load_started_with(store, "tnk-demo", 1700000100).has_value());
}

TEST_F(SandboxTest, ResolveCreatedSandboxKeepsItsMountPoint) {
  save_record(BackendKind::kNs, "base");
  state::Store store(paths_.sandboxes_dir());
  auto record = store.load("tnk-demo");
  ASSERT_TRUE(record.ok() && *record);
  (*record)->mount_point = "/srv/w";
  ASSERT_TRUE(store.save(**record).ok());
  ctx().cwd = project_dir() / "sub";
  auto r = resolve_ok();
  EXPECT_EQ(r.runtime_env["TNK_WORKSPACE_MOUNT"], "/srv/w");
  EXPECT_EQ(r.guest_workdir, "/srv/w/sub");
}

// --- to_json -----------------------------------------------------------------------------------------

TEST_F(SandboxTest, ResolveToJsonFields) {
  write_config("model_name = \"qwen-coder\"\ncontext_window = 4096\n");
  ctx().cwd = project_dir() / "sub";
  auto options = with_profile("dev");
  options.backend = "ns";
  auto r = resolve_ok(options);
  auto j = sandbox::to_json(r);
  EXPECT_EQ(j["id"], "tnk-demo");
  EXPECT_EQ(j["project"],
            (nlohmann::json{{"name", "demo"}, {"dir", project_dir().string()}, {"workspace_root", code().string()}}));
  EXPECT_EQ(j["profile"], (nlohmann::json{{"name", "dev"}, {"source", "--profile"}}));
  EXPECT_EQ(j["manifest"], (paths_.config_dir / "sandbox.d/manifests/dev.yaml").string());
  EXPECT_EQ(j["provision_script"], (paths_.config_dir / "sandbox.d/provision.d/dev.sh").string());
  EXPECT_EQ(j["provision_root_script"], (paths_.config_dir / "sandbox.d/provision.d/dev.root.sh").string());
  EXPECT_EQ(j["mount"], "/workspace");
  EXPECT_EQ(j["workdir"], "/workspace/sub");
  EXPECT_EQ(j["network"], nlohmann::json::parse(R"({"policy": "inference", "source": "manifest", "allow": [],
      "provision": "allowlist", "provision_allow": [], "ports": []})"));
  EXPECT_EQ(j["runtime_env"]["TNK_MODEL_NAME"], "qwen-coder");
  EXPECT_EQ(j["runtime_env"].size(), 7u);
  EXPECT_EQ(j["agent"], nlohmann::json::parse(R"({"apis": [], "env": {}})"));
  EXPECT_EQ(j["inference"], (nlohmann::json{{"url", kRefusingEndpoint},
                                            {"model", "qwen-coder"},
                                            {"model_source", "config"},
                                            {"context_window", 4096},
                                            {"context_source", "config"}}));
  EXPECT_EQ(j["backend"], nlohmann::json::parse(R"({"name": "ns", "source": "--backend", "why": "", "weaker": null})"));
  EXPECT_EQ(j["state"], "absent");
  EXPECT_EQ(j["notes"], nlohmann::json(r.notes));
  EXPECT_EQ(j["workspace"], (nlohmann::json{{"mode", "direct"}, {"source", "default"}}));
  EXPECT_EQ(j.size(), 16u);
}

TEST_F(SandboxTest, ReviewModeComesFromTheFlagElseTheManifest) {
  auto options = with_profile("dev");
  options.backend = "ns";
  options.review = true;
  auto flagged = resolve_ok(options);
  EXPECT_TRUE(flagged.review);
  EXPECT_EQ(flagged.review_source, "--review");
  ASSERT_TRUE(write_file_atomic(paths_.config_dir / "sandbox.d/manifests/dev.yaml", "workspace: review\n").ok());
  options.review = false;
  auto manifest = resolve_ok(options);
  EXPECT_TRUE(manifest.review);
  EXPECT_EQ(manifest.review_source, "manifest");
}

TEST_F(SandboxTest, ResolveToJsonWithoutManifestOrScriptIsNull) {
  fs::remove(paths_.config_dir / "sandbox.d/manifests/base-sandbox.yaml");
  auto r = resolve_ok(with_profile("base"));
  auto j = sandbox::to_json(r);
  EXPECT_TRUE(j["manifest"].is_null());
  EXPECT_TRUE(j["provision_script"].is_null());
}

}  // namespace
}  // namespace tnk::testing_sandbox
