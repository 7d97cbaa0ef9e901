#include "backend/k8s/egress_probe.h"

#include "backend/k8s/names.h"
#include "backend/k8s/objects.h"

namespace tnk::k8s {

using json = nlohmann::json;

namespace {

// bash's /dev/tcp opens a TCP connection; timeout ends a connect that a dropping policy leaves hanging.
const std::string kConnect = "timeout " + std::to_string(kProbeConnectSeconds) +
                             " bash -c 'exec 3<>\"/dev/tcp/$KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT\"'";

json probe_labels(const std::string& name) {
  return {{"app.kubernetes.io/managed-by", "tnk"}, {std::string(kLabelPrefix) + "probe", name}};
}

json probe_pod(const ClusterSettings& cluster, const std::string& name) {
  json spec = {{"restartPolicy", "Never"},
               {"automountServiceAccountToken", false},
               {"activeDeadlineSeconds", 60},
               {"securityContext", {{"runAsNonRoot", true}, {"runAsUser", 65532}, {"runAsGroup", 65532}}},
               {"containers", json::array({json{{"name", "probe"},
                                                {"image", image(cluster, kProbeImage, kProbeImageTag)},
                                                {"command", json::array({"bash", "-c", kConnect})},
                                                {"securityContext",
                                                 {{"allowPrivilegeEscalation", false},
                                                  {"capabilities", {{"drop", json::array({"ALL"})}}},
                                                  {"readOnlyRootFilesystem", true}}}}})}};
  if (cluster.runtime_class) spec["runtimeClassName"] = *cluster.runtime_class;
  return {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata(name, cluster, probe_labels(name))}, {"spec", spec}};
}

}  // namespace

EgressProbe egress_probe(const ClusterSettings& cluster, const std::string& suffix) {
  EgressProbe probe;
  const std::string stem = "tnk-egress-probe-" + suffix;
  probe.policy = stem + "-deny";
  probe.confined = stem + "-confined";
  probe.open = stem + "-open";
  json policy = {{"apiVersion", "networking.k8s.io/v1"},
                 {"kind", "NetworkPolicy"},
                 {"metadata", metadata(probe.policy, cluster, probe_labels(probe.policy))},
                 {"spec",
                  {{"podSelector", {{"matchLabels", {{std::string(kLabelPrefix) + "probe", probe.confined}}}}},
                   {"policyTypes", json::array({"Ingress", "Egress"})}}}};
  probe.objects = {policy, probe_pod(cluster, probe.confined), probe_pod(cluster, probe.open)};
  return probe;
}

}  // namespace tnk::k8s
