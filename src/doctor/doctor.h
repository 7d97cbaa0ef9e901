// tnk doctor: a registry of checks, each with a status and a fix line. Modules (config, specs,
// inference, backends) add their own checks; the command runs them all and reports.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tnk::doctor {

enum class Status { kOk, kInfo, kWarn, kFail };
std::string to_string(Status status);

struct Outcome {
  Status status = Status::kOk;
  std::string summary;  // what was found
  std::string fix;      // what to do; empty when ok
};

struct Check {
  std::string id;        // stable, for -o json consumers: "config", "workspace_root", ...
  std::string title;     // "configuration file"
  bool required = true;  // a failing required check makes doctor exit non-zero
  std::function<Outcome()> run;
};

struct CheckResult {
  Check check;
  Outcome outcome;
};

class Registry {
 public:
  void add(Check check) { checks_.push_back(std::move(check)); }
  const std::vector<Check>& checks() const { return checks_; }

 private:
  std::vector<Check> checks_;
};

// The command a fix line names: its first `...` span (fix lines quote the command to run, as in
// "run `tnk init`"). Empty when it quotes none. Doctor prints it alone on its fix line, so that the line
// works when pasted into a shell.
std::string fix_command(const std::string& fix);

std::vector<CheckResult> run_checks(const Registry& registry);
// True when no required check failed.
bool passed(const std::vector<CheckResult>& results);
nlohmann::json to_json(const std::vector<CheckResult>& results);
std::string render_text(const std::vector<CheckResult>& results, bool color);

}  // namespace tnk::doctor
