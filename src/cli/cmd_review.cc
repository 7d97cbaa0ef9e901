// tnk sandbox diff | apply | discard: review mode's verbs (docs/workspace.md).
#include <iostream>

#include "backend/review.h"
#include "cli/sandbox_verbs.h"
#include "core/terminal_text.h"

namespace tnk::cli {
namespace {

struct ReviewFlags {
  std::vector<std::string> paths;
  bool all = false;
  bool stat = false;
  bool patch = false;
  std::string audit_log;
};

Result<backend::ReviewRequest> request_of(Context& ctx, const ReviewFlags& flags) {
  backend::ReviewRequest request;
  TNK_ASSIGN_OR_RETURN(request.id, current_sandbox_id(ctx));
  request.paths = flags.paths;
  request.all = flags.all;
  request.audit_log = flags.audit_log;
  return request;
}

char letter(review::ChangeKind kind) {
  switch (kind) {
    case review::ChangeKind::kAdded: return 'A';
    case review::ChangeKind::kModified: return 'M';
    case review::ChangeKind::kDeleted: return 'D';
    case review::ChangeKind::kMode: return 'm';
  }
  return '?';
}

std::string mode_note(const review::Change& c) {
  if (c.old_type == review::EntryType::kNone || c.type == review::EntryType::kNone) return {};
  if (c.old_type != c.type)
    return std::string("  (") + review::to_string(c.old_type) + " -> " + review::to_string(c.type) + ")";
  if (c.old_mode == c.new_mode) return {};
  char buf[40];
  std::snprintf(buf, sizeof buf, "  (mode %04o -> %04o)", c.old_mode, c.new_mode);
  return buf;
}

void print_changes(std::ostream& os, const backend::DiffReport& report, bool stat) {
  size_t counts[4] = {}, host_run = 0;
  for (const auto& c : report.changes) {
    ++counts[static_cast<int>(c.kind)];
    if (!c.host_run.empty()) ++host_run;
    if (stat) continue;
    os << letter(c.kind) << "  " << quoted_path(c.path) << (c.type == review::EntryType::kDir ? "/" : "")
       << mode_note(c);
    if (!c.host_run.empty()) os << "  [runs on the host: " << c.host_run << "]";
    if (c.ignored) os << "  [ignored]";
    os << '\n';
  }
  if (report.changes.empty() && !stat) os << "no changes in the review layer\n";
  if (stat) {
    os << counts[0] << " added, " << counts[1] << " modified, " << counts[2] << " deleted, " << counts[3]
       << " mode changed; " << host_run << " run on the host\n";
  }
}

// git diff's colours: bold headers, cyan hunk lines, red removed, green added.
const char* colour_of(review::PatchLineKind kind) {
  switch (kind) {
    case review::PatchLineKind::kHeader: return "\033[1m";
    case review::PatchLineKind::kHunk: return "\033[36m";
    case review::PatchLineKind::kRemoved: return "\033[31m";
    case review::PatchLineKind::kAdded: return "\033[32m";
    case review::PatchLineKind::kContext:
    case review::PatchLineKind::kPlain: return nullptr;
  }
  return nullptr;
}

void note_state(Context& ctx, bool running, size_t ignored_hidden) {
  if (running) ctx.log.note("the sandbox runs: this is its layer now, which may still change");
  if (ignored_hidden > 0) {
    ctx.log.note(std::to_string(ignored_hidden) + " ignored path(s) (.gitignore) not shown: --all shows them");
  }
}

// The patch as `git apply` reads it when stdout is not a terminal. On a terminal the sandbox's bytes
// are made visible (terminal_safe: an escape sequence in a file could otherwise hide a line from the
// reviewer) and coloured unless NO_COLOR.
Result<int> run_patch(Context& ctx, const backend::ReviewRequest& request) {
  if (ctx.out.machine()) {
    return usage_error(
        "--patch prints a unified diff, not " + std::string(ctx.out.format() == OutputFormat::kJson   ? "JSON"
                                                            : ctx.out.format() == OutputFormat::kYaml ? "YAML"
                                                                                                      : "NDJSON"),
        "drop -o, or drop --patch for the changes as JSON");
  }
  TNK_ASSIGN_OR_RETURN(backend::PatchReport report, backend::review_patch(ctx, request));
  note_state(ctx, report.running, report.ignored_hidden);
  const bool tty = ctx.terminal.stdout_tty;
  const bool colour = use_color(ctx.env, tty);
  std::string text;
  for (const auto& line : report.lines) {
    const char* code = colour ? colour_of(line.kind) : nullptr;
    if (code != nullptr) text += code;
    text += tty ? terminal_safe(line.text) : line.text;
    if (code != nullptr) text += "\033[m";
    text += '\n';
  }
  ctx.out.raw(text);
  return kExitOk;
}

Result<int> run_diff(Context& ctx, const ReviewFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  if (flags.patch && flags.stat) return usage_error("--patch and --stat: choose one", "tnk sandbox diff --patch");
  if (flags.patch) return run_patch(ctx, request);
  TNK_ASSIGN_OR_RETURN(backend::DiffReport report, backend::review_diff(ctx, request));
  note_state(ctx, report.running, report.ignored_hidden);
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : report.changes) changes.push_back(backend::to_json(c));
  nlohmann::json doc = {{"sandbox", request.id},
                        {"running", report.running},
                        {"gitignore", report.git_aware ? "git" : "none"},
                        {"ignored_hidden", report.ignored_hidden},
                        {"changes", changes}};
  ctx.out.document(doc, [&](std::ostream& os) { print_changes(os, report, flags.stat); });
  return kExitOk;
}

void print_touched(Context& ctx, const char* verb, const std::vector<review::Touched>& touched) {
  ctx.out.list(backend::to_json(touched), [&](std::ostream& os) {
    for (const auto& t : touched) os << letter(t.kind) << "  " << quoted_path(t.path) << '\n';
    os << verb << ' ' << touched.size() << " path(s)\n";
  });
}

Result<int> run_apply(Context& ctx, const ReviewFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  TNK_ASSIGN_OR_RETURN(auto touched, backend::review_apply(ctx, request));
  print_touched(ctx, "applied", touched);
  return kExitOk;
}

Result<int> run_discard(Context& ctx, const ReviewFlags& flags) {
  TNK_ASSIGN_OR_RETURN(auto request, request_of(ctx, flags));
  TNK_ASSIGN_OR_RETURN(auto dropped, backend::review_discard(ctx, request));
  print_touched(ctx, "discarded", dropped);
  return kExitOk;
}

}  // namespace

void add_review_commands(CLI::App& sandbox, CommandTable& table) {
  auto* diff = sandbox.add_subcommand("diff", "Show what a review-mode sandbox changed in the project");
  describe(*diff,
           "List what the sandbox's review layer changes in the project: A added, M modified, D deleted, m mode "
           "changed (a rename is a D and an A), flagging the paths the host runs later (git hooks and config, "
           "build and package scripts). Paths the project's .gitignore ignores (as the host's git reads it) are "
           "left out unless --all. --patch prints the changed lines as a unified diff that `git apply` accepts "
           "(binary files as a GIT binary patch, chmod as old mode/new mode, links as git shows them), written by "
           "tnk itself: no git and nothing the sandbox wrote runs. Coloured on a terminal unless NO_COLOR, where "
           "control characters are shown escaped. Works while the sandbox runs. Exit 66 when the sandbox has no "
           "review layer.",
           "tnk sandbox diff --patch src/");
  auto diff_flags = std::make_shared<ReviewFlags>();
  diff->add_option("PATH", diff_flags->paths, "Only changes to these paths (files or directories)");
  diff->add_flag("--stat", diff_flags->stat, "Print only the counts");
  diff->add_flag("--patch,-p", diff_flags->patch, "Print the changed lines as a unified diff (git apply reads it)");
  diff->add_flag("--all", diff_flags->all, "Include paths the project's .gitignore ignores");
  table.add(diff, [diff, diff_flags](Context& ctx) {
    diff_flags->paths = positional_words(*diff);
    return run_diff(ctx, *diff_flags);
  });

  auto* apply = sandbox.add_subcommand("apply", "Write a review-mode sandbox's changes into the project");
  describe(*apply,
           "Write the review layer's changes (all that `diff` shows, or those below each PATH) into the project, "
           "each file atomically, never through a symbolic link and never setuid or setgid, then take them out "
           "of the layer and write a workspace_apply audit record. Works while the sandbox runs: its processes "
           "keep running, and the layer is left as it is (its copies then match the project). Refuses, writing "
           "nothing, when a selected path changed in the project since the layer was made.",
           "tnk sandbox apply src/ README.md");
  auto apply_flags = std::make_shared<ReviewFlags>();
  apply->add_option("PATH", apply_flags->paths, "Apply only changes to these paths (files or directories)");
  apply->add_flag("--all", apply_flags->all, "Include paths the project's .gitignore ignores");
  apply->add_option("--audit-log", apply_flags->audit_log, "Append the audit record to this file");
  table.add(apply, [apply, apply_flags](Context& ctx) {
    apply_flags->paths = positional_words(*apply);
    return run_apply(ctx, *apply_flags);
  });

  auto* discard = sandbox.add_subcommand("discard", "Drop a review-mode sandbox's changes (all, or at PATHs)");
  describe(*discard,
           "Empty the review layer (with PATHs, drop what it holds at and below each), so the sandbox sees the "
           "project as it is on the host there again, and write a workspace_discard audit record naming every "
           "dropped path. A running sandbox is stopped for it and started again (overlayfs does not allow its layer "
           "to change under a mounted overlay): its processes end.",
           "tnk sandbox discard build/ notes.txt");
  auto discard_flags = std::make_shared<ReviewFlags>();
  discard->add_option("PATH", discard_flags->paths, "Discard only what is at and below these paths");
  discard->add_option("--audit-log", discard_flags->audit_log, "Append the audit record to this file");
  table.add(discard, [discard, discard_flags](Context& ctx) {
    discard_flags->paths = positional_words(*discard);
    return run_discard(ctx, *discard_flags);
  });
}

}  // namespace tnk::cli
