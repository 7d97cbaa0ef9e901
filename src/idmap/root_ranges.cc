#include "idmap/root_ranges.h"

#include "core/files.h"

namespace tnk::idmap {

RootRanges root_ranges_in(std::string_view subuid, std::string_view subgid) {
  auto uids = find_range(subuid, "root", 0);
  auto gids = find_range(subgid, "root", 0);
  if (!uids || !gids) return RootRanges{};
  return RootRanges{*uids, *gids, true};
}

RootRanges root_ranges() {
  auto subuid = read_file(kSubuidFile);
  auto subgid = read_file(kSubgidFile);
  if (!subuid.ok() || !subgid.ok()) return RootRanges{};
  return root_ranges_in(*subuid, *subgid);
}

std::vector<std::string> overlapping_owners(std::string_view content, IdRange range) {
  const uint64_t end = uint64_t{range.start} + range.count;
  std::vector<std::string> owners;
  for (const SubordinateEntry& e : subordinate_entries(content)) {
    if (e.owner == "root" || e.owner == "0") continue;
    if (uint64_t{e.start} + e.count <= range.start || e.start >= end) continue;
    owners.push_back(e.owner);
  }
  return owners;
}

std::string range_text(IdRange range) {
  return std::to_string(range.start) + "-" + std::to_string(uint64_t{range.start} + range.count - 1);
}

}  // namespace tnk::idmap
