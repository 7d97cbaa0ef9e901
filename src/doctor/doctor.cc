#include "doctor/doctor.h"

#include "core/terminal_text.h"

namespace tnk::doctor {

std::string to_string(Status status) {
  switch (status) {
    case Status::kOk: return "ok";
    case Status::kInfo: return "info";
    case Status::kWarn: return "warn";
    case Status::kFail: return "fail";
  }
  return "fail";
}

std::vector<CheckResult> run_checks(const Registry& registry) {
  std::vector<CheckResult> results;
  for (const auto& check : registry.checks()) results.push_back({check, check.run()});
  return results;
}

bool passed(const std::vector<CheckResult>& results) {
  for (const auto& r : results) {
    if (r.check.required && r.outcome.status == Status::kFail) return false;
  }
  return true;
}

std::string fix_command(const std::string& fix) {
  const auto open = fix.find('`');
  const auto close = open == std::string::npos ? open : fix.find('`', open + 1);
  if (close == std::string::npos) return "";
  return fix.substr(open + 1, close - open - 1);
}

nlohmann::json to_json(const std::vector<CheckResult>& results) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& r : results) {
    checks.push_back(
        {{"id", r.check.id},
         {"title", r.check.title},
         {"required", r.check.required},
         {"status", to_string(r.outcome.status)},
         {"summary", r.outcome.summary},
         {"fix", r.outcome.fix.empty() ? nlohmann::json() : nlohmann::json(r.outcome.fix)},
         {"fix_command",
          fix_command(r.outcome.fix).empty() ? nlohmann::json() : nlohmann::json(fix_command(r.outcome.fix))}});
  }
  return {{"ok", passed(results)}, {"checks", checks}};
}

std::string render_text(const std::vector<CheckResult>& results, bool color) {
  std::string text;
  for (const auto& r : results) {
    const char* mark = "ok  ";
    const char* paint = "\033[32m";
    switch (r.outcome.status) {
      case Status::kOk: break;
      case Status::kInfo:
        mark = "info";
        paint = "\033[36m";
        break;
      case Status::kWarn:
        mark = "warn";
        paint = "\033[33m";
        break;
      case Status::kFail:
        mark = r.check.required ? "FAIL" : "warn";
        paint = "\033[31m";
        break;
    }
    text += color ? std::string(paint) + mark + "\033[0m" : std::string(mark);
    // A check may quote a sandbox (the proxy's answer): its text is printed through terminal_safe.
    text += "  " + terminal_safe(r.check.title + ": " + r.outcome.summary) + "\n";
    // The command alone on the fix line (it pastes), then what the fix says about it when that is more.
    const std::string command = fix_command(r.outcome.fix);
    if (command.empty()) {
      if (!r.outcome.fix.empty()) text += "      fix: " + terminal_safe(r.outcome.fix) + "\n";
    } else {
      text += "      fix: " + terminal_safe(command) + "\n";
      if (r.outcome.fix != "run `" + command + "`") text += "           " + terminal_safe(r.outcome.fix) + "\n";
    }
  }
  text += passed(results) ? "doctor: all required checks passed\n" : "doctor: some required checks failed\n";
  return text;
}

}  // namespace tnk::doctor
