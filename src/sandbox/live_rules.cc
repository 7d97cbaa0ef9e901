#include "sandbox/live_rules.h"

#include <system_error>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "state/layout.h"

namespace tnk::sandbox {

Result<std::vector<net::LiveRule>> load_live_rules(const std::filesystem::path& state_dir) {
  std::filesystem::path path = state_dir / state::kNetworkRulesFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<net::LiveRule>{};
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto json = nlohmann::json::parse(text, nullptr, false);
  auto rules = net::rules_from_json(json.is_object() ? json.value("rules", nlohmann::json()) : json);
  if (!rules) {
    return failed(path.string() + " is corrupt: " + rules.error().message,
                  "remove it to drop the rules of tnk sandbox allow and deny");
  }
  return net::unexpired(*rules, net::unix_ms_now());
}

Status save_live_rules(const std::filesystem::path& state_dir, const std::vector<net::LiveRule>& rules) {
  nlohmann::json json = {{"rules", net::to_json(rules)}};
  return write_file_atomic(state_dir / state::kNetworkRulesFile, json.dump(2) + "\n");
}

}  // namespace tnk::sandbox
