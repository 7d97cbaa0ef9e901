// Names, label values and quantities as Kubernetes accepts them, made from tnk's: a sandbox id keeps
// case and '_' (naming/naming.h), an object name may not. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tnk::k8s {

// The prefix of tnk's labels and annotations.
inline constexpr const char* kLabelPrefix = "tnk/";
// The longest suffix a sandbox's objects add to its name ("-supervisor"); names stay within a DNS label.
inline constexpr size_t kMaxNameSuffix = 11;
inline constexpr size_t kMaxDnsLabel = 63;

// The sandbox's object name: the id in lower case with '_' as '-', when that is a DNS-1123 label of at
// most 63 - kMaxNameSuffix characters and the id needed no change; else its cut form with
// "-<8 hex>" of the whole id, so that ids that differ only in case or '_' stay apart.
std::string object_name(std::string_view id);

// The SandboxTemplate's name for a profile at a fingerprint: "tnk-<profile>-<12 hex>" ("-none" without
// a fingerprint), the profile part cut and hashed as object_name does.
std::string template_name(std::string_view profile, std::string_view fingerprint);

// A label value: [A-Za-z0-9._-], at most 63, alphanumeric at both ends; what is left out is dropped.
// Empty when nothing is left (an empty label value is valid).
std::string label_value(std::string_view text);

// A Secret's data key: [-._a-zA-Z0-9], anything else as '-'.
std::string secret_key(std::string_view text);

// A quantity in the largest binary unit that divides it exactly: "2Gi", "1536Mi", "1000".
std::string quantity(uint64_t bytes);

// The variable Kubernetes sets in a pod for a Service created before it: "<NAME>_SERVICE_HOST", the
// name in upper case with '-' as '_'.
std::string service_host_variable(std::string_view service);

}  // namespace tnk::k8s
