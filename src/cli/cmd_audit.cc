// tnk audit verify PATH: checks an audit log's hash chain and names the first broken record.
#include "audit/verify.h"
#include "cli/command.h"

namespace tnk::cli {

void add_audit_commands(CLI::App& root, CommandTable& table) {
  auto* audit = root.add_subcommand("audit", "Work with audit logs");
  describe(*audit, "Work with tnk's NDJSON audit logs.", "tnk audit verify ~/audit/session.ndjson");
  auto* verify = audit->add_subcommand("verify", "Check that an audit log is complete and unedited");
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

}  // namespace tnk::cli
