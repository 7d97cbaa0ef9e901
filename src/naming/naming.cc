#include "naming/naming.h"

#include <string>

namespace tnk::naming {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr size_t kHashHexDigits = 8;
constexpr std::string_view kEmptyNameFallback = "project";
constexpr std::string_view kListHint = "`tnk sandbox ls` lists the names";

bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool is_id_char(char c) { return is_ascii_alnum(c) || c == '-' || c == '_'; }

bool is_env_key_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool is_env_key_char(char c) { return is_env_key_start(c) || (c >= '0' && c <= '9'); }

constexpr std::string_view kEnvKeyChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";

// User input echoed in a message: control and non-ASCII bytes become \xNN so that a name cannot
// rewrite the terminal or hide part of itself.
std::string printable(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  return out;
}

std::string hash_suffix(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto low = static_cast<uint32_t>(fnv1a64(name) & 0xffffffffULL);
  std::string out(kHashHexDigits, '0');
  for (size_t i = kHashHexDigits; i-- > 0;) {
    out[i] = kHex[low & 0xfU];
    low >>= 4;
  }
  return out;
}

std::string sanitize(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (is_id_char(c)) out += c;
  }
  return out;
}

// Cuts `base` to `budget` characters and trims the '-'/'_' the cut may have left at its end.
std::string cut_base(std::string_view base, size_t budget) {
  std::string cut(base.substr(0, budget));
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '_')) cut.pop_back();
  if (cut.empty()) cut = std::string(kEmptyNameFallback.substr(0, budget));
  return cut;
}

}  // namespace

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t acc = kFnvOffset;
  for (char c : bytes) {
    acc ^= static_cast<unsigned char>(c);
    acc *= kFnvPrime;
  }
  return acc;
}

Result<std::string> sandbox_id(std::string_view project_name, size_t max_length) {
  if (project_name.empty()) {
    return usage_error("cannot name a sandbox: the project name is empty",
                       "run tnk from inside a project directory below the workspace root");
  }
  if (max_length < kMinSandboxIdBudget) {
    return failed("cannot name a sandbox for project '" + printable(project_name) +
                      "': the state directory path is too long (only " + std::to_string(max_length) +
                      " characters are left for the sandbox id in a unix socket path, " +
                      std::to_string(kMinSandboxIdBudget) + " are needed)",
                  "set XDG_STATE_HOME to a shorter path, for example ~/.local/state");
  }
  const std::string sanitized = sanitize(project_name);
  const bool clean = sanitized == project_name;
  const std::string base = sanitized.empty() ? std::string(kEmptyNameFallback) : sanitized;
  const std::string prefix(kSandboxIdPrefix);

  std::string id = clean ? prefix + base : prefix + base + "-" + hash_suffix(project_name);
  if (id.size() <= max_length) return id;

  // prefix + cut + "-" + hash must fit exactly; max_length >= kMinSandboxIdBudget leaves >= 1 char.
  const size_t budget = max_length - prefix.size() - 1 - kHashHexDigits;
  return prefix + cut_base(base, budget) + "-" + hash_suffix(project_name);
}

size_t max_sandbox_id_length(const std::filesystem::path& sandboxes_dir) {
  std::string dir = sandboxes_dir.native();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // "<dir>" + "/" + id + "/" + name
  const size_t fixed = dir.size() + 1 + 1 + kLongestSocketName.size();
  if (fixed >= kSunPathUsable) return 0;
  const size_t room = kSunPathUsable - fixed;
  return room < kMaxSandboxIdLength ? room : kMaxSandboxIdLength;
}

Status validate_sandbox_name(std::string_view name) {
  const std::string quoted = "invalid sandbox name '" + printable(name) + "': ";
  if (name.substr(0, kSandboxIdPrefix.size()) != kSandboxIdPrefix) {
    return usage_error(quoted + "must start with '" + std::string(kSandboxIdPrefix) + "'", std::string(kListHint));
  }
  if (name.size() == kSandboxIdPrefix.size()) {
    return usage_error(quoted + "nothing follows '" + std::string(kSandboxIdPrefix) + "'", std::string(kListHint));
  }
  if (name.size() > kMaxSandboxIdLength) {
    return usage_error(quoted + "longer than " + std::to_string(kMaxSandboxIdLength) + " characters",
                       std::string(kListHint));
  }
  std::string_view base = name.substr(0, name.find('.'));
  for (char c : base) {
    if (!is_id_char(c)) {
      return usage_error(quoted + "only letters, digits, '-' and '_' are allowed, and a fork's '.<n>' at the end",
                         std::string(kListHint));
    }
  }
  if (base.size() < name.size() && (base.size() == kSandboxIdPrefix.size() || fork_number(base, name) == 0)) {
    return usage_error(quoted + "a fork's name ends in '.' and its number (1 to 9999)", std::string(kListHint));
  }
  return ok_status();
}

std::string fork_id(std::string_view parent, int n) { return std::string(parent) + "." + std::to_string(n); }

int fork_number(std::string_view parent, std::string_view id) {
  if (id.size() <= parent.size() + 1 || id.substr(0, parent.size()) != parent || id[parent.size()] != '.') return 0;
  std::string_view digits = id.substr(parent.size() + 1);
  if (digits.size() > 4 || digits.front() == '0') return 0;
  int n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

Result<std::string> select_sandbox(std::string_view project_id, std::string_view selected) {
  TNK_RETURN_IF_ERROR(validate_sandbox_name(selected));
  if (selected == project_id || fork_number(project_id, selected) > 0) return std::string(selected);
  return usage_error("--sandbox " + printable(selected) + ": this project's sandbox is " + std::string(project_id) +
                         ", and its forks are " + std::string(project_id) + ".N",
                     "`tnk sandbox ls` lists the forks with their parent; run the command in the fork's project");
}

Status validate_checkpoint_name(std::string_view name) {
  const std::string quoted = "invalid checkpoint name '" + printable(name) + "': ";
  const char* hint = "`tnk sandbox checkpoints` lists them; a name has letters, digits, '-' and '_'";
  if (name.empty() || name.size() > 64) return usage_error(quoted + "it needs 1 to 64 characters", hint);
  if (name.front() == '-') return usage_error(quoted + "it must not start with '-'", hint);
  for (char c : name) {
    if (!is_id_char(c)) return usage_error(quoted + "only letters, digits, '-' and '_' are allowed", hint);
  }
  return ok_status();
}

Result<std::string> user_cgroup_name(std::string_view user) {
  bool valid = !user.empty() && user.size() <= 32 && user.front() != '-' && user.front() != '.';
  for (size_t i = 0; valid && i < user.size(); ++i) {
    char c = user[i];
    bool last_dollar = c == '$' && i + 1 == user.size();
    valid = is_id_char(c) || c == '.' || last_dollar;
  }
  if (!valid) {
    return usage_error("invalid user name '" + printable(user) + "'",
                       "a user name has letters, digits, '.', '-' and '_' and does not start with '-' or '.'");
  }
  return "tnk-user-" + std::string(user);
}

Status validate_env_assignment(std::string_view kv, std::string* key, std::string* value) {
  const size_t eq = kv.find('=');
  if (eq == std::string_view::npos) {
    // Echo the input only when it looks like a variable name: `-e $TOKEN` must not print the token.
    const bool looks_like_key =
        !kv.empty() && is_env_key_start(kv.front()) && kv.find_first_not_of(kEnvKeyChars) == std::string_view::npos;
    const std::string what = looks_like_key ? " '" + std::string(kv) + "'" : std::string();
    return usage_error("invalid environment assignment" + what + ": expected KEY=VALUE (no '=' found)",
                       "pass variables as -e NAME=value");
  }
  const std::string_view k = kv.substr(0, eq);
  const std::string_view v = kv.substr(eq + 1);
  const std::string hint = "variable names are letters, digits and '_', not starting with a digit";
  if (k.empty()) {
    return usage_error("invalid environment assignment: the variable name before '=' is empty", hint);
  }
  const std::string name_msg = "invalid environment variable name '" + printable(k) + "': ";
  if (!is_env_key_start(k.front())) {
    const bool digit = k.front() >= '0' && k.front() <= '9';
    return usage_error(name_msg + (digit ? "must not start with a digit" : "must start with a letter or '_'"), hint);
  }
  for (char c : k) {
    if (!is_env_key_char(c)) return usage_error(name_msg + "only letters, digits and '_' are allowed", hint);
  }
  if (k.substr(0, 4) == "TNK_") {
    return usage_error("environment variable '" + std::string(k) +
                           "' is reserved: names starting with TNK_ are set by tnk and cannot be overridden "
                           "with -e",
                       "choose a name without the TNK_ prefix");
  }
  // From here on the key is known to be printable; the value is never echoed.
  const std::string value_msg = "invalid value for environment variable '" + std::string(k) + "': ";
  if (v.find_first_of(std::string_view("\0\r\n", 3)) != std::string_view::npos) {
    return usage_error(value_msg + "contains a newline, carriage return or NUL byte",
                       "pass multi-line values through a file in the project directory instead");
  }
  if (v.size() > kMaxEnvValueBytes) {
    return usage_error(value_msg + "too long (" + std::to_string(v.size()) + " bytes, at most " +
                           std::to_string(kMaxEnvValueBytes) + ")",
                       "pass large values through a file in the project directory instead");
  }
  if (key != nullptr) *key = std::string(k);
  if (value != nullptr) *value = std::string(v);
  return ok_status();
}

}  // namespace tnk::naming
