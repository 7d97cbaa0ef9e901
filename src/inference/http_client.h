// A minimal HTTP/1.1 GET over plain TCP for probing the local inference server. One attempt,
// one overall deadline (connect + send + receive), no redirects, no TLS, no keep-alive.
#pragma once

#include <chrono>
#include <string>

#include "core/result.h"
#include "inference/http_parse.h"

namespace tnk::inference {

// GETs `url` (http://host[:port][/path]; hostnames via getaddrinfo, IPv4 and [IPv6] literals).
// Tries each resolved address in turn within `timeout`, which bounds connect, send and receive
// together. Name resolution itself is not bounded (getaddrinfo has no timeout); literals and
// /etc/hosts names resolve without the network. The body is capped at 4 MiB.
// Errors carry an errno: ETIMEDOUT (no answer in time), ECONNREFUSED and other connect errors
// (nothing reachable), EBADMSG or EFBIG (the server answered, but not with usable HTTP).
// With `bearer`, the request carries `Authorization: Bearer <bearer>` (doctor's check of the API key);
// the key is never part of an error message.
Result<HttpResponse> http_get(const std::string& url, std::chrono::milliseconds timeout,
                              const std::string& bearer = "");

// http_get's second half, for a caller that connects its own way (the k8s backend, over a unix socket):
// sends `request` (a whole HTTP/1.1 request with `Connection: close`) on the connected socket `fd` and reads
// the answer, within `timeout`. `what` names the request in errors; the errors are http_get's.
Result<HttpResponse> http_exchange(int fd, const std::string& request, const std::string& what,
                                   std::chrono::milliseconds timeout);

// True when `error` from http_get means a server answered (badly): it is reachable.
bool is_bad_answer(const Error& error);

// "1 s", "250 ms", "1500 ms": how timeouts are shown to the user.
std::string format_timeout(std::chrono::milliseconds timeout);

}  // namespace tnk::inference
