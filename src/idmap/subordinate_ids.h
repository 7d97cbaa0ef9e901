// The subordinate id ranges of /etc/subuid and /etc/subgid ("name-or-uid:start:count" lines, the
// shadow-utils format that useradd writes and newuidmap checks). A rootless sandbox maps its inside
// ids onto the invoking user's range, so that no inside id but `agent` is the user's own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::idmap {

inline constexpr const char* kSubuidFile = "/etc/subuid";
inline constexpr const char* kSubgidFile = "/etc/subgid";

// The ids a sandbox needs inside: 0 to 65535 (nobody is 65534).
inline constexpr uint32_t kInsideIdCount = 65536;

struct IdRange {
  uint32_t start = 0;
  uint32_t count = 0;
};

// One "owner:start:count" line.
struct SubordinateEntry {
  std::string owner;  // a name or a uid, as written
  uint32_t start = 0;
  uint32_t count = 0;
};

// Every well-formed line of `content`, in order (malformed ones are skipped, as newuidmap does).
std::vector<SubordinateEntry> subordinate_entries(std::string_view content);

// The first line of `content` for `name` (or for `id` written as a number) whose range holds
// kInsideIdCount ids; nullopt when there is none. Malformed lines are skipped, as newuidmap does.
std::optional<IdRange> find_range(std::string_view content, std::string_view name, uint32_t id);

// find_range over `file`; an error names the file, the user, and the command that adds a range.
Result<IdRange> read_range(const std::filesystem::path& file, const std::string& name, uint32_t id);

// The command an administrator runs once to give `name` its ranges (`tnk setup` does the same).
std::string add_range_command(const std::string& name);

}  // namespace tnk::idmap
