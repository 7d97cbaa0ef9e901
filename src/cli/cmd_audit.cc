// tnk audit verify PATH: checks an audit log's hash chain and names the first broken record.
// tnk audit summary PATH: the log's inference requests per model and per session, its chain checked too.
#include <cstdio>
#include <ctime>
#include <optional>
#include <ostream>
#include <system_error>

#include "audit/summary.h"
#include "audit/verify.h"
#include "cli/command.h"
#include "core/terminal_text.h"

namespace tnk::cli {
namespace {

void add_verify_command(CLI::App& audit, CommandTable& table) {
  auto* verify = audit.add_subcommand("verify", "Check that an audit log is complete and unedited");
  describe(*verify,
           "Check an audit log's chain (seq numbers and the hash of each previous record) and report the first "
           "record that was edited, deleted or truncated. Exit 1 when the chain is broken.",
           "tnk audit verify ~/.local/state/tnk/audit/tnk-homepage.ndjson");
  auto path = std::make_shared<std::string>();
  verify->add_option("path", *path, "The audit log (NDJSON)")->required();
  table.add(verify, [path](Context& ctx) -> Result<int> {
    TNK_ASSIGN_OR_RETURN(audit::VerifyReport report, audit::verify_log(*path));
    ctx.out.document(audit::to_json(report), [&](std::ostream& os) {
      if (report.ok) {
        os << "ok: " << *path << ": " << report.records << " records, chain intact\n";
      } else {
        os << "broken: " << *path << ":" << report.bad_line << ": " << report.problem << "\n";
      }
    });
    return report.ok ? kExitOk : kExitFailed;
  });
}

std::string milliseconds(std::optional<double> value) {
  if (!value) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", *value);
  return buf;
}

std::vector<std::string> stat_cells(std::string label, const audit::RequestStats& s) {
  return {terminal_safe(label),
          std::to_string(s.requests),
          std::to_string(s.errors),
          std::to_string(s.prompt_tokens),
          std::to_string(s.completion_tokens),
          std::to_string(s.without_tokens),
          milliseconds(audit::median(s.latency_ms)),
          milliseconds(audit::p95(s.latency_ms)),
          milliseconds(audit::median(s.ttfb_ms)),
          milliseconds(audit::p95(s.ttfb_ms))};
}

std::vector<std::string> stat_headers(std::string first) {
  return {std::move(first), "REQUESTS",    "ERRORS",      "PROMPT-TOKENS", "COMPLETION-TOKENS",
          "NO-TOKENS",      "LATENCY-P50", "LATENCY-P95", "TTFB-P50",      "TTFB-P95"};
}

// "#12 2026-12-03T13:42:38Z bash -l": start seq, start time (UTC) and the command, cut to fit a line.
std::string session_label(const audit::SessionInfo& session) {
  char when[32] = "?";
  std::tm tm{};
  time_t ts = static_cast<time_t>(session.start_ts);
  if (gmtime_r(&ts, &tm) != nullptr) std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string command;
  for (const auto& arg : session.argv) command += (command.empty() ? "" : " ") + arg;
  if (command.size() > 48) {
    size_t cut = 45;
    while (cut > 0 && (static_cast<unsigned char>(command[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    command = command.substr(0, cut) + "...";
  }
  std::string label = "#" + std::to_string(session.start_seq) + " " + when;
  return command.empty() ? label : label + " " + command;
}

void print_summary(std::ostream& os, const std::string& path, const audit::Summary& summary) {
  os << path << ": " << summary.records << " records, " << summary.total.requests << " inference requests\n";
  if (summary.total.requests == 0) return;
  std::vector<std::vector<std::string>> models;
  for (const auto& [model, stats] : summary.models)
    models.push_back(stat_cells(model.empty() ? "(none)" : model, stats));
  models.push_back(stat_cells("total", summary.total));
  os << '\n' << render_table(stat_headers("MODEL"), models);
  std::vector<std::vector<std::string>> sessions;
  for (const auto& [index, stats] : summary.by_session) {
    sessions.push_back(stat_cells(session_label(summary.sessions[index]), stats));
  }
  if (summary.no_session.requests > 0) sessions.push_back(stat_cells("no session", summary.no_session));
  os << '\n' << render_table(stat_headers("SESSION"), sessions);
}

void add_summary_command(CLI::App& audit, CommandTable& table) {
  auto* summary = audit.add_subcommand("summary", "Count an audit log's inference requests per model and session");
  describe(*summary,
           "Report an audit log's inference requests per model and per session: requests, errors, tokens, median "
           "and p95 latency and time to first byte. The chain is checked too: when it is broken, a warning names "
           "the first broken record, the summary is still printed, and the exit status is 1.",
           "tnk audit summary ~/.local/state/tnk/audit/tnk-homepage.ndjson");
  auto path = std::make_shared<std::string>();
  summary->add_option("path", *path, "The audit log (NDJSON)")->required();
  table.add(summary, [path](Context& ctx) -> Result<int> {
    audit::SummaryBuilder builder;
    TNK_ASSIGN_OR_RETURN(audit::VerifyReport chain,
                         audit::verify_log(*path, [&](const nlohmann::json& record) { builder.add(record); }));
    const audit::Summary& result = builder.summary();
    if (!chain.ok && result.records == 0) {
      return failed(*path + " is not an audit log: none of its lines is a record with \"event\" and \"seq\"",
                    "give the NDJSON log tnk writes (--audit-log, or audit_dir in tnk.toml)");
    }
    if (!chain.ok) {
      ctx.log.warn("audit log " + *path + ": chain broken at line " + std::to_string(chain.bad_line) + ": " +
                   chain.problem + "; the summary counts every record that could be read, edited or not");
    }
    nlohmann::json doc = audit::to_json(result);
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(*path, ec);
    doc["path"] = (ec ? std::filesystem::path(*path) : absolute).lexically_normal().string();
    doc["chain"] = audit::to_json(chain);
    ctx.out.document(doc, [&](std::ostream& os) { print_summary(os, *path, result); });
    return chain.ok ? kExitOk : kExitFailed;
  });
}

}  // namespace

void add_audit_commands(CLI::App& root, CommandTable& table) {
  auto* audit = root.add_subcommand("audit", "Work with audit logs");
  describe(*audit, "Work with tnk's NDJSON audit logs.", "tnk audit verify ~/audit/session.ndjson");
  add_verify_command(*audit, table);
  add_summary_command(*audit, table);
}

}  // namespace tnk::cli
