#include "supervisor/config.h"

#include "net/base64.h"
#include "net/ssh_wire.h"

namespace tnk::supervisor {

nlohmann::json to_json(const SupervisorConfig& config) {
  nlohmann::json json = {
      {"id", config.id},
      {"backend", to_string(config.backend)},
      {"state_dir", config.state_dir.string()},
      {"image_root", config.image_root.string()},
      {"project_dir", config.project_dir.string()},
      {"mount_point", config.mount_point},
      {"readonly_paths", config.readonly_paths},
      {"review", config.review},
      {"inference_host", config.inference_host},
      {"inference_port", config.inference_port},
      {"network", to_string(config.network)},
      {"allow", config.allow},
      {"live_rules", net::to_json(config.live_rules)},
      {"open_ports", config.open_ports},
      {"audit_log", config.audit_log.string()},
      {"vm_kernel", config.vm_kernel.string()},
      {"vm_base_disk", config.vm_base_disk.string()},
      {"vm_kvm", config.vm_kvm},
  };
  json["gateway"] = {{"api_key", config.gateway.api_key},           {"aliases", config.gateway.aliases},
                     {"concurrency", config.gateway.concurrency},   {"request_limit", config.gateway.request_limit},
                     {"answer_limit", config.gateway.answer_limit}, {"token_env", config.gateway.token_env}};
  json["routes"] = nlohmann::json::array();
  for (const net::CredentialRoute& r : config.routes) {
    json["routes"].push_back({{"name", r.name},
                              {"host", r.host},
                              {"port", r.port},
                              {"ca_file", r.ca_file},
                              {"methods", r.methods},
                              {"paths", r.paths},
                              {"header_name", r.header_name},
                              {"header_value", r.header_value},
                              {"secrets", r.secrets}});
  }
  json["git_routes"] = config.git_routes;
  for (const net::SshRoute& r : config.ssh_routes) {  // keys (public ones) in base64, as .pub files hold them
    nlohmann::json identities = nlohmann::json::array();
    for (const std::string& key : r.identities) identities.push_back(net::base64_encode(key));
    json["ssh_routes"].push_back(
        {{"host", r.host}, {"port", r.port}, {"host_key", net::base64_encode(r.host_key)}, {"identities", identities}});
  }
  if (!config.ssh_agent.empty()) json["ssh_agent"] = config.ssh_agent.string();
  if (config.disk_bytes) json["disk_bytes"] = *config.disk_bytes;
  for (const PortForward& f : config.forwards) {
    json["forwards"].push_back({{"host_port", f.host_port}, {"guest_port", f.guest_port}});
  }
  if (config.memory_bytes) json["memory_bytes"] = *config.memory_bytes;
  if (config.cpus) json["cpus"] = *config.cpus;
  if (config.allow_unlimited) json["allow_unlimited"] = true;
  if (config.cgroup_scope) json["cgroup_scope"] = true;
  return json;
}

Result<SupervisorConfig> config_from_json(const nlohmann::json& json) {
  try {
    SupervisorConfig config;
    config.id = json.at("id").get<std::string>();
    auto backend = parse_backend_kind(json.at("backend").get<std::string>());
    if (!backend) return failed("invalid supervisor config: unknown backend " + json.at("backend").dump());
    config.backend = *backend;
    config.state_dir = json.at("state_dir").get<std::string>();
    config.image_root = json.at("image_root").get<std::string>();
    config.project_dir = json.at("project_dir").get<std::string>();
    config.mount_point = json.at("mount_point").get<std::string>();
    config.readonly_paths = json.value("readonly_paths", std::vector<std::string>());
    config.review = json.value("review", false);
    config.inference_host = json.at("inference_host").get<std::string>();
    config.inference_port = json.at("inference_port").get<uint16_t>();
    if (json.contains("gateway")) {
      const auto& gateway = json["gateway"];
      config.gateway.api_key = gateway.value("api_key", std::string());
      config.gateway.aliases = gateway.value("aliases", std::map<std::string, std::string>());
      config.gateway.concurrency = gateway.value("concurrency", 4u);
      config.gateway.request_limit = gateway.value("request_limit", config.gateway.request_limit);
      config.gateway.answer_limit = gateway.value("answer_limit", config.gateway.answer_limit);
      config.gateway.token_env = gateway.value("token_env", std::vector<std::string>());
    }
    for (const auto& r : json.value("routes", nlohmann::json::array())) {
      config.routes.push_back(
          {r.at("name").get<std::string>(), r.at("host").get<std::string>(), r.at("port").get<uint16_t>(),
           r.at("ca_file").get<std::string>(), r.at("methods").get<std::vector<std::string>>(),
           r.at("paths").get<std::vector<std::string>>(), r.at("header_name").get<std::string>(),
           r.at("header_value").get<std::string>(), r.at("secrets").get<std::vector<std::string>>()});
    }
    config.git_routes = json.value("git_routes", std::map<std::string, std::string>());
    auto blob = [](const nlohmann::json& text) -> Result<std::string> {
      auto decoded = net::base64_decode(text.get<std::string>());
      if (!decoded) return failed("invalid supervisor config: a key of ssh_routes is not base64");
      return *decoded;
    };
    for (const auto& r : json.value("ssh_routes", nlohmann::json::array())) {
      net::SshRoute route{r.at("host").get<std::string>(), r.at("port").get<uint16_t>(), "", {}};
      TNK_ASSIGN_OR_RETURN(route.host_key, blob(r.at("host_key")));
      for (const auto& key : r.at("identities")) {
        TNK_ASSIGN_OR_RETURN(std::string identity, blob(key));
        route.identities.push_back(std::move(identity));
      }
      config.ssh_routes.push_back(std::move(route));
    }
    config.ssh_agent = json.value("ssh_agent", std::string());
    auto network = parse_network_policy(json.at("network").get<std::string>());
    if (!network) return failed("invalid supervisor config: unknown network policy " + json.at("network").dump());
    config.network = *network;
    config.allow = json.at("allow").get<std::vector<std::string>>();
    config.open_ports = json.value("open_ports", std::vector<uint16_t>());
    TNK_ASSIGN_OR_RETURN(config.live_rules, net::rules_from_json(json.value("live_rules", nlohmann::json::array())));
    config.audit_log = json.at("audit_log").get<std::string>();
    for (const auto& f : json.value("forwards", nlohmann::json::array())) {
      config.forwards.push_back({f.at("host_port").get<uint16_t>(), f.at("guest_port").get<uint16_t>()});
    }
    if (json.contains("memory_bytes")) config.memory_bytes = json["memory_bytes"].get<uint64_t>();
    config.vm_kernel = json.value("vm_kernel", std::string());
    config.vm_base_disk = json.value("vm_base_disk", std::string());
    config.vm_kvm = json.value("vm_kvm", false);
    if (json.contains("disk_bytes")) config.disk_bytes = json["disk_bytes"].get<uint64_t>();
    if (json.contains("cpus")) config.cpus = json["cpus"].get<double>();
    config.allow_unlimited = json.value("allow_unlimited", false);
    config.cgroup_scope = json.value("cgroup_scope", false);
    return config;
  } catch (const nlohmann::json::exception& e) {
    return failed(std::string("invalid supervisor config: ") + e.what());
  }
}

}  // namespace tnk::supervisor
