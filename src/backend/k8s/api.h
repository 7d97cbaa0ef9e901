// How the k8s backend talks to a cluster: Kubernetes' REST API, in plain HTTP over a unix socket that a
// `kubectl proxy` of this command's own serves. kubectl does what tnk should not redo (the kubeconfig, its
// contexts, TLS, every kind of credential); the socket lives in a directory only this user can open, so no
// other local user borrows the credentials, as a proxy on a loopback port would let them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tnk::k8s {

// tnk.toml's k8s.kubeconfig (expanded) and k8s.context; unset: kubectl's own defaults ($KUBECONFIG,
// ~/.kube/config, the current context).
struct KubeAccess {
  std::optional<std::filesystem::path> kubeconfig;
  std::optional<std::string> context;
};

// One answer of the API server: its status and its JSON body (null when it sent none or not JSON, as
// kubectl proxy's own errors are: then `text` has them).
struct ApiAnswer {
  int status = 0;
  nlohmann::json body;
  std::string text;
};

class ClusterApi {
 public:
  // Starts `kubectl proxy` and waits until it serves. Fails with kubectl's own words when it cannot
  // (no kubectl, no kubeconfig, an unknown context).
  static Result<std::unique_ptr<ClusterApi>> connect(const KubeAccess& access);
  ~ClusterApi();  // stops the proxy and removes its directory
  ClusterApi(const ClusterApi&) = delete;
  ClusterApi& operator=(const ClusterApi&) = delete;

  // One request; a non-2xx answer is an answer, not an error. `body` is sent as JSON with `content_type`.
  Result<ApiAnswer> call(const std::string& method, const std::string& path, const nlohmann::json* body = nullptr,
                         const std::string& content_type = "application/json");

  // The object at `path`, or nullopt when the cluster has none.
  Result<std::optional<nlohmann::json>> get(const std::string& path);
  // Creates `object` in the collection at `path`; false when one of that name exists already.
  Result<bool> create(const std::string& path, const nlohmann::json& object);
  // A JSON merge patch (RFC 7386) of the object at `path`.
  Status merge_patch(const std::string& path, const nlohmann::json& patch);
  // Deletes the object at `path`; false when there was none.
  Result<bool> remove(const std::string& path);

 private:
  ClusterApi(pid_t proxy, std::filesystem::path dir) : proxy_(proxy), dir_(std::move(dir)) {}
  Error refused(const std::string& doing, const ApiAnswer& answer) const;

  pid_t proxy_;
  std::filesystem::path dir_;  // the private directory with the socket and kubectl's output
};

// What a non-2xx answer says: the API server's message, or the text kubectl proxy answered with, and
// "(HTTP <status>)".
std::string api_message(const ApiAnswer& answer);

}  // namespace tnk::k8s
