// naming: the only code that turns user strings (project names, --name, -e KEY=VALUE) into ids
// and validated values. Everything that later becomes a path component or an exported variable
// passes through here first (STYLE.md habit 9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.h"

namespace tnk::naming {

// Every sandbox id starts with this; `sandbox ls` and `sandbox stop --name` rely on it.
inline constexpr std::string_view kSandboxIdPrefix = "tnk-";

// Lima instance names are also host names: at most 63 characters. We keep the same cap on every
// backend so that an id is portable between them.
inline constexpr size_t kMaxSandboxIdLength = 63;

// sockaddr_un.sun_path is 108 bytes on Linux; one is the terminating NUL.
inline constexpr size_t kSunPathUsable = 107;

// The longest socket file name tnk creates inside a sandbox state directory
// (`<sandboxes_dir>/<id>/<name>`). The state module must not add a longer one without updating this:
// max_sandbox_id_length() sizes ids so that this name still fits in sun_path.
inline constexpr std::string_view kLongestSocketName = "virtiofsd.sock";

// "tnk-" + 1 character + "-" + 8 hex digits: the shortest id that can still carry the hash.
inline constexpr size_t kMinSandboxIdBudget = 14;

// Longest value accepted for `-e KEY=VALUE`.
inline constexpr size_t kMaxEnvValueBytes = 4096;

// FNV-1a 64-bit (offset 0xcbf29ce484222325, prime 0x100000001b3), as the original tnk uses.
uint64_t fnv1a64(std::string_view bytes);

// The sandbox id for a project directory name: "tnk-<token>", at most `max_length` characters.
// ASCII names get exactly the original tnk's ids:
//   only [A-Za-z0-9_-] kept (every non-ASCII byte dropped, case preserved); a name that changed gets
//   "-<8 hex>" (low 32 bits of fnv1a64 of the full original name); nothing left -> "project-<8 hex>".
// Too long for `max_length`: the kept part is cut (trailing '-'/'_' trimmed) and the hash is always
// appended, so distinct long names stay distinct.
// Errors: empty name (usage); max_length < kMinSandboxIdBudget (failed: state dir path too long).
Result<std::string> sandbox_id(std::string_view project_name, size_t max_length);

// The largest id length such that `<sandboxes_dir>/<id>/<kLongestSocketName>` fits in sun_path,
// capped at kMaxSandboxIdLength. 0 when even an empty id would not fit.
size_t max_sandbox_id_length(const std::filesystem::path& sandboxes_dir);

// For `sandbox stop --name N`: "tnk-" followed by [A-Za-z0-9_-]+, then a fork's ".<n>" if any, at most
// 63 characters in total. Never accepts '/', "..", or anything else that could walk out of the
// sandboxes directory.
Status validate_sandbox_name(std::string_view name);

// The id of fork `n` (1, 2, ...) of sandbox `parent` (`tnk sandbox fork`): "<parent>.<n>". A project's id
// never holds a '.', so no project's sandbox can take a fork's id.
std::string fork_id(std::string_view parent, int n);
// The n of a fork's id whose parent is `parent`; 0 when `id` is not one of its forks.
int fork_number(std::string_view parent, std::string_view id);

// `--sandbox NAME` in a project whose sandbox is `project_id`: NAME when it is that sandbox or one of its
// forks, else a usage error (a selector never reaches another project's sandbox).
Result<std::string> select_sandbox(std::string_view project_id, std::string_view selected);

// A checkpoint's name (`tnk sandbox checkpoint NAME`): [A-Za-z0-9_-], 1 to 64 characters, not
// starting with '-'. It becomes a directory name.
Status validate_checkpoint_name(std::string_view name);

// For `-e KEY=VALUE`: KEY is [A-Za-z_][A-Za-z0-9_]* and does not start with "TNK_" (runtime variables
// cannot be overridden); VALUE has no NUL/CR/LF and is at most kMaxEnvValueBytes. Error messages name
// the key but never echo the value (it may be a secret). `key`/`value` may be null; they are written
// only on success.
Status validate_env_assignment(std::string_view kv, std::string* key, std::string* value);

// The cgroup directory that `tnk setup` gives an ordinary user on a host without systemd's delegation,
// and below which that user's sandboxes put their own (tnk-<id>): "tnk-user-<user>". The user name
// (the shadow-utils rules: [A-Za-z0-9_.-], not starting with '-' or '.', a trailing '$' allowed) is
// checked here because it becomes a path component.
Result<std::string> user_cgroup_name(std::string_view user);

}  // namespace tnk::naming
