#include "idmap/id_map.h"

namespace tnk::idmap {

IdMap sandbox_map(IdRange range, uint32_t own_id, uint32_t agent_id) {
  IdMap map;
  if (agent_id > 0) map.push_back({0, range.start, agent_id});
  map.push_back({agent_id, own_id, 1});
  uint32_t after = agent_id + 1;
  if (after < kInsideIdCount) map.push_back({after, range.start + after, kInsideIdCount - after});
  return map;
}

IdMap owner_map(IdRange range, uint32_t own_id) {
  return {{0, range.start, kInsideIdCount}, {kInsideIdCount, own_id, 1}};
}

IdMap agentless_map(uint32_t agent_id) {
  return {{0, 0, agent_id}, {agent_id + 1, agent_id + 1, kInsideIdCount - agent_id - 1}};
}

std::optional<uint32_t> outside_id(const IdMap& map, uint32_t inside) {
  for (const auto& e : map) {
    if (inside >= e.inside && inside - e.inside < e.count) return e.outside + (inside - e.inside);
  }
  return std::nullopt;
}

std::string proc_map_text(const IdMap& map) {
  std::string text;
  for (const auto& e : map) {
    text += std::to_string(e.inside) + " " + std::to_string(e.outside) + " " + std::to_string(e.count) + "\n";
  }
  return text;
}

std::vector<std::string> helper_args(const IdMap& map) {
  std::vector<std::string> args;
  for (const auto& e : map) {
    args.push_back(std::to_string(e.inside));
    args.push_back(std::to_string(e.outside));
    args.push_back(std::to_string(e.count));
  }
  return args;
}

}  // namespace tnk::idmap
