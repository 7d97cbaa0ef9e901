#include "inference/endpoint_doctor.h"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "inference/listeners.h"
#include "inference/model_probe.h"
#include "inference/url.h"

namespace tnk::inference {
namespace {

// The GETs the checks make, each made once.
class Answers {
 public:
  explicit Answers(Fetch fetch) : fetch_(std::move(fetch)) {}
  const Result<HttpResponse>& get(const std::string& url, const std::string& bearer) {
    auto key = std::make_pair(url, bearer);
    auto it = seen_.find(key);
    if (it == seen_.end()) it = seen_.emplace(key, fetch_(url, bearer)).first;
    return it->second;
  }

 private:
  Fetch fetch_;
  std::map<std::pair<std::string, std::string>, Result<HttpResponse>> seen_;
};

bool refused(const HttpResponse& r) { return r.status == 401 || r.status == 403; }
bool success(const HttpResponse& r) { return r.status >= 200 && r.status <= 299; }

std::string models_url(const std::string& base) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/models";
}

doctor::Outcome not_checked(const std::string& why) { return {doctor::Status::kInfo, "not checked: " + why, ""}; }

// --- listening address ---------------------------------------------------------------------------------

bool local_host(const std::string& host) {
  return host == "localhost" || host.starts_with("127.") || host == "::1" || host == "0.0.0.0" || host == "::";
}

doctor::Outcome bind_outcome(const EndpointSetup& setup, const ReadFile& read_file) {
  auto url = parse_url(setup.url);
  if (!url) return not_checked(url.error().message);
  if (!local_host(url->host)) return not_checked(url->host + " is not this host's loopback");
  std::vector<Listener> on_port;
  for (const auto& [path, ipv6] : {std::pair{"/proc/net/tcp", false}, std::pair{"/proc/net/tcp6", true}}) {
    auto table = read_file(path);
    if (!table) continue;
    for (const Listener& l : parse_proc_net_tcp(*table, ipv6)) {
      if (l.port == url->port) on_port.push_back(l);
    }
  }
  if (on_port.empty()) return not_checked("nothing listens on port " + std::to_string(url->port) + " here");
  std::string open, local;
  for (const Listener& l : on_port) {
    std::string& list = l.loopback ? local : open;
    list += (list.empty() ? "" : ", ") + to_string(l) + (l.wildcard ? " (every interface)" : "");
  }
  if (open.empty()) return {doctor::Status::kOk, "listens on " + local + " only", ""};
  return {doctor::Status::kWarn,
          "the server listens on " + open +
              ": other machines on the network can use it, its admin API included, past tnk's checks",
          "make it listen on loopback only: `llama-server --host 127.0.0.1`; for Ollama OLLAMA_HOST=127.0.0.1:11434, "
          "for vLLM --host 127.0.0.1"};
}

// --- loaded model ----------------------------------------------------------------------------------------

// The names an Ollama /api/tags answer lists ({"models": [{"name": ...}]}); nullopt when it is not one.
std::optional<size_t> ollama_model_count(const std::string& body) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("models") || !doc["models"].is_array()) return std::nullopt;
  size_t n = 0;
  for (const auto& m : doc["models"]) {
    if (m.is_object() && m.value("name", "") != "") ++n;
  }
  return n;
}

const char* kLoadModelFix =
    "load a model: `llama-server -m MODEL.gguf`, for Ollama `ollama pull MODEL`, for vLLM `vllm serve MODEL`";

doctor::Outcome models_outcome(const EndpointSetup& setup, Answers& answers) {
  const std::string url = models_url(setup.url);
  const auto& answer = answers.get(url, setup.key);
  if (!answer) return not_checked(answer.error().message);
  if (refused(*answer))
    return not_checked("the server refuses GET /models (HTTP " + std::to_string(answer->status) +
                       "): see the API key check");
  if (success(*answer)) {
    auto listing = parse_models_listing(answer->body);
    if (listing && listing->model_id) return {doctor::Status::kOk, "GET " + url + " lists " + *listing->model_id, ""};
    return {doctor::Status::kWarn, "GET " + url + " lists no model: agents' requests will fail", kLoadModelFix};
  }
  // Ollama without its OpenAI layer: its own list.
  const std::string tags = endpoint_root(setup.url) + "/api/tags";
  const auto& ollama = answers.get(tags, setup.key);
  std::optional<size_t> count = ollama && success(*ollama) ? ollama_model_count(ollama->body) : std::nullopt;
  if (!count) return not_checked("GET " + url + " answered HTTP " + std::to_string(answer->status));
  if (*count == 0)
    return {doctor::Status::kWarn, "GET " + tags + " lists no model: agents' requests will fail", kLoadModelFix};
  return {doctor::Status::kOk, "GET " + tags + " lists " + std::to_string(*count) + " model(s)", ""};
}

// --- context window --------------------------------------------------------------------------------------

doctor::Outcome context_outcome(const EndpointSetup& setup, Answers& answers) {
  if (!setup.min_context_window) {
    return {doctor::Status::kOk, "profile " + setup.profile + " asks for no minimum (min_context_window)", ""};
  }
  const uint64_t need = *setup.min_context_window;
  const std::string needs =
      "profile " + setup.profile + " needs at least " + std::to_string(need) + " tokens (min_context_window)";
  const auto& answer = answers.get(models_url(setup.url), setup.key);
  std::optional<uint64_t> served;
  if (answer && success(*answer)) {
    if (auto listing = parse_models_listing(answer->body)) served = listing->context_window;
  }
  if (!served && !setup.configured_context) {
    return {doctor::Status::kInfo, "the server does not report its context window; " + needs,
            "set context_window in tnk.toml to the server's context, so that doctor and agents know it"};
  }
  const uint64_t have = served ? *served : *setup.configured_context;
  const std::string from = served ? "the server reports" : "tnk.toml's context_window says";
  const std::string n = std::to_string(need);
  if (have >= need) return {doctor::Status::kOk, from + " " + std::to_string(have) + " tokens; " + needs, ""};
  return {doctor::Status::kWarn, from + " a context window of " + std::to_string(have) + " tokens; " + needs,
          "restart the server with a larger context: `llama-server -c " + n + "`, for Ollama OLLAMA_CONTEXT_LENGTH=" +
              n + ", for vLLM --max-model-len " + n + (served ? "" : "; then raise context_window in tnk.toml")};
}

// --- API key ---------------------------------------------------------------------------------------------

doctor::Outcome key_outcome(const EndpointSetup& setup, Answers& answers) {
  if (setup.key_error) return {doctor::Status::kFail, setup.key_error->message, setup.key_error->hint};
  const std::string url = models_url(setup.url);
  const auto& answer = answers.get(url, setup.key);
  if (!answer) return not_checked(answer.error().message);
  const std::string status = "HTTP " + std::to_string(answer->status);
  if (setup.key.empty()) {
    if (refused(*answer)) {
      return {doctor::Status::kWarn,
              "the server answers GET " + url + " with " + status + " without an API key, and tnk.toml names none",
              "name the variable that holds the server's key in tnk.toml: api_key_env = \"NAME\" under [inference] "
              "(or api_key_file = \"PATH\", a file only you can read)"};
    }
    return {doctor::Status::kOk, "none configured, and the server asks for none", ""};
  }
  const std::string source = "the key from " + setup.key_source;
  if (refused(*answer)) {
    return {doctor::Status::kFail, "the server refuses " + source + ": GET " + url + " answered " + status,
            "check " + source + " against the server's own (llama-server --api-key, vLLM --api-key)"};
  }
  return {doctor::Status::kOk, "the server accepts " + source, ""};
}

}  // namespace

void add_endpoint_checks(doctor::Registry& registry, const EndpointSetup& setup, Fetch fetch, ReadFile read_file) {
  auto answers = std::make_shared<Answers>(std::move(fetch));
  registry.add({"inference_bind", "inference endpoint: listening address", false,
                [setup, read_file]() { return bind_outcome(setup, read_file); }});
  registry.add({"inference_models", "inference endpoint: loaded model", false,
                [setup, answers]() { return models_outcome(setup, *answers); }});
  registry.add({"inference_context", "inference endpoint: context window", false,
                [setup, answers]() { return context_outcome(setup, *answers); }});
  // Required when tnk.toml names a key: a key that cannot be read stops every sandbox start.
  registry.add({"inference_key", "inference endpoint: API key", setup.key_source != "none",
                [setup, answers]() { return key_outcome(setup, *answers); }});
}

}  // namespace tnk::inference
