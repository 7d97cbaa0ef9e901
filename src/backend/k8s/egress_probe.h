// `tnk doctor --backend k8s`'s test of the cluster's network plugin, as objects (pure): two pods that try
// to reach the cluster's API server through its Service (the one address every pod is given), one of them
// under a deny-all NetworkPolicy like the one every tnk agent pod is under. The cluster enforces egress
// when the confined pod fails and the open one gets through: a pair, so that a pod that can reach nothing
// at all is not taken for a policy that holds.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/k8s/plan.h"

namespace tnk::k8s {

// The image the probe pods run: bash and timeout, nothing of tnk's (`bash:5.2`, in k8s.image_registry
// when one is set).
inline constexpr const char* kProbeImage = "bash";
inline constexpr const char* kProbeImageTag = "5.2";
inline constexpr int kProbeConnectSeconds = 5;

struct EgressProbe {
  std::string policy, confined, open;   // the objects' names
  std::vector<nlohmann::json> objects;  // the policy first, so that the confined pod never runs without it
};

// The probe's objects, named "tnk-egress-probe-<suffix>-...". Each pod exits 0 when its connection to
// the API server's Service opened, non-zero otherwise.
EgressProbe egress_probe(const ClusterSettings& cluster, const std::string& suffix);

}  // namespace tnk::k8s
