// The credential a proxy can demand of its clients: HTTP Basic in Proxy-Authorization (RFC 7617),
// which apt, npm, pip and curl send by themselves when the proxy URL carries user:password. The
// provisioning proxy uses one per run, so that only the run's own processes can use it (security
// review M3).
#pragma once

#include <string>
#include <string_view>

#include "net/http_request.h"

namespace tnk::net {

// The Proxy-Authorization value for `user` and `password`: "Basic " + base64("user:password").
std::string basic_credential(std::string_view user, std::string_view password);

// Whether `head` carries exactly the Proxy-Authorization value `expected` (scheme compared without
// case, the rest byte for byte, in time that does not depend on where they differ).
bool carries_credential(const RequestHead& head, std::string_view expected);

}  // namespace tnk::net
