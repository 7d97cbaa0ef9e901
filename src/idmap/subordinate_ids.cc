#include "idmap/subordinate_ids.h"

#include <charconv>

#include "core/files.h"

namespace tnk::idmap {
namespace {

std::optional<uint32_t> parse_number(std::string_view text) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::vector<SubordinateEntry> subordinate_entries(std::string_view content) {
  std::vector<SubordinateEntry> entries;
  while (!content.empty()) {
    size_t nl = content.find('\n');
    std::string_view line = content.substr(0, nl);
    content.remove_prefix(nl == std::string_view::npos ? content.size() : nl + 1);
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    auto start = parse_number(line.substr(first + 1, second - first - 1));
    auto count = parse_number(line.substr(second + 1));
    if (!start || !count) continue;
    entries.push_back({std::string(line.substr(0, first)), *start, *count});
  }
  return entries;
}

std::optional<IdRange> find_range(std::string_view content, std::string_view name, uint32_t id) {
  const std::string id_text = std::to_string(id);
  for (const SubordinateEntry& e : subordinate_entries(content)) {
    if (e.owner != name && e.owner != id_text) continue;
    if (e.count < kInsideIdCount || uint64_t{e.start} + e.count > uint64_t{UINT32_MAX}) continue;
    return IdRange{e.start, e.count};
  }
  return std::nullopt;
}

std::string add_range_command(const std::string& name) { return "sudo tnk setup --user " + name; }

Result<IdRange> read_range(const std::filesystem::path& file, const std::string& name, uint32_t id) {
  auto content = read_file(file);
  if (!content.ok() && content.error().kind != ErrorKind::kNotFound) {
    return content.error();
  }
  if (content.ok()) {
    if (auto range = find_range(*content, name, id)) return *range;
  }
  return permission_denied(file.string() + " gives user " + name + " no range of " + std::to_string(kInsideIdCount) +
                               " subordinate ids: a rootless sandbox maps its root and system users there",
                           "run `" + add_range_command(name) + "` once (or `sudo usermod --add-subuids " +
                               "100000-165535 --add-subgids 100000-165535 " + name + "` with a free range)");
}

}  // namespace tnk::idmap
