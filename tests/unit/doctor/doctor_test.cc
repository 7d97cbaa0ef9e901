// tnk doctor's check registry (src/doctor/doctor.h): order, required vs optional failures, and what
// the command prints and derives from them (`tnk doctor` exits 1 exactly when passed() is false).
#include "doctor/doctor.h"

#include <gtest/gtest.h>

namespace tnk::doctor {
namespace {

Check check(const std::string& id, bool required, Outcome outcome, int* runs = nullptr) {
  return {id, "the " + id, required, [outcome, runs] {
            if (runs != nullptr) ++*runs;
            return outcome;
          }};
}

const Outcome kOk{Status::kOk, "fine", ""};
const Outcome kFail{Status::kFail, "missing", "install it"};

TEST(DoctorStatus, Names) {
  EXPECT_EQ(to_string(Status::kOk), "ok");
  EXPECT_EQ(to_string(Status::kInfo), "info");
  EXPECT_EQ(to_string(Status::kWarn), "warn");
  EXPECT_EQ(to_string(Status::kFail), "fail");
}

TEST(DoctorRegistry, RunsEveryCheckOnceInTheOrderAdded) {
  int runs[3] = {0, 0, 0};
  Registry registry;
  registry.add(check("config", true, kOk, &runs[0]));
  registry.add(check("kvm", false, kFail, &runs[1]));
  registry.add(check("workspace_root", true, kOk, &runs[2]));
  ASSERT_EQ(registry.checks().size(), 3u);
  EXPECT_EQ(runs[0] + runs[1] + runs[2], 0);  // adding runs nothing
  auto results = run_checks(registry);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].check.id, "config");
  EXPECT_EQ(results[1].check.id, "kvm");
  EXPECT_EQ(results[2].check.id, "workspace_root");
  EXPECT_EQ(results[1].outcome.status, Status::kFail);
  EXPECT_EQ(results[1].outcome.fix, "install it");
  EXPECT_EQ(runs[0], 1);
  EXPECT_EQ(runs[1], 1);
  EXPECT_EQ(runs[2], 1);
}

TEST(DoctorRegistry, EmptyRegistryPasses) {
  auto results = run_checks(Registry{});
  EXPECT_TRUE(results.empty());
  EXPECT_TRUE(passed(results));
}

std::vector<CheckResult> run_one(bool required, Outcome outcome) {
  Registry registry;
  registry.add(check("a", true, kOk));
  registry.add(check("b", required, std::move(outcome)));
  return run_checks(registry);
}

TEST(DoctorPassed, ARequiredFailureFails) { EXPECT_FALSE(passed(run_one(true, kFail))); }

TEST(DoctorPassed, AnOptionalFailureStillPasses) { EXPECT_TRUE(passed(run_one(false, kFail))); }

TEST(DoctorPassed, RequiredWarningsAndInfoPass) {
  EXPECT_TRUE(passed(run_one(true, {Status::kWarn, "slow", "enable kvm"})));
  EXPECT_TRUE(passed(run_one(true, {Status::kInfo, "no lima", ""})));
}

TEST(DoctorJson, Shape) {
  EXPECT_EQ(to_json(run_one(true, kFail)), nlohmann::json::parse(R"({"ok": false, "checks": [
      {"id": "a", "title": "the a", "required": true, "status": "ok", "summary": "fine", "fix": null,
       "fix_command": null},
      {"id": "b", "title": "the b", "required": true, "status": "fail", "summary": "missing", "fix": "install it",
       "fix_command": null}]})"));
  auto optional = to_json(run_one(false, kFail));
  EXPECT_EQ(optional["ok"], true);
  EXPECT_EQ(optional["checks"][1]["required"], false);
  EXPECT_EQ(optional["checks"][1]["status"], "fail");
}

TEST(DoctorText, RequiredFailureIsFailAndTheSummarySaysSo) {
  EXPECT_EQ(render_text(run_one(true, kFail), false),
            "ok    the a: fine\n"
            "FAIL  the b: missing\n"
            "      fix: install it\n"
            "doctor: some required checks failed\n");
}

// A fix line that quotes its command prints the command alone, so that the line pastes into a shell.
TEST(DoctorText, TheFixLineIsTheCommandItQuotes) {
  EXPECT_EQ(fix_command("run `tnk init`"), "tnk init");
  EXPECT_EQ(fix_command("create it with `mkdir -p /h/code` or set TNK_WORKSPACE_ROOT"), "mkdir -p /h/code");
  EXPECT_EQ(fix_command("start your inference server"), "");
  EXPECT_EQ(fix_command("an unclosed `quote"), "");
  Registry registry;
  registry.add({"s", "specs", true, [] { return Outcome{Status::kFail, "not installed", "run `tnk init`"}; }});
  registry.add({"w", "root", true, [] {
                  return Outcome{Status::kFail, "missing", "create it with `mkdir -p /h/code` or set X"};
                }});
  EXPECT_EQ(render_text(run_checks(registry), false),
            "FAIL  specs: not installed\n"
            "      fix: tnk init\n"
            "FAIL  root: missing\n"
            "      fix: mkdir -p /h/code\n"
            "           create it with `mkdir -p /h/code` or set X\n"
            "doctor: some required checks failed\n");
  EXPECT_EQ(to_json(run_checks(registry))["checks"][1]["fix_command"], "mkdir -p /h/code");
}

TEST(DoctorText, OptionalFailureIsOnlyAWarning) {
  EXPECT_EQ(render_text(run_one(false, kFail), false),
            "ok    the a: fine\n"
            "warn  the b: missing\n"
            "      fix: install it\n"
            "doctor: all required checks passed\n");
}

TEST(DoctorText, InfoAndWarnMarks) {
  Registry registry;
  registry.add(check("i", false, {Status::kInfo, "lima not installed", ""}));
  registry.add(check("w", true, {Status::kWarn, "tcg only", "load kvm_intel"}));
  EXPECT_EQ(render_text(run_checks(registry), false),
            "info  the i: lima not installed\n"
            "warn  the w: tcg only\n"
            "      fix: load kvm_intel\n"
            "doctor: all required checks passed\n");
}

TEST(DoctorText, ColorPaintsOnlyTheMark) {
  EXPECT_EQ(render_text(run_one(true, kFail), true),
            "\033[32mok  \033[0m  the a: fine\n"
            "\033[31mFAIL\033[0m  the b: missing\n"
            "      fix: install it\n"
            "doctor: some required checks failed\n");
}

}  // namespace
}  // namespace tnk::doctor
