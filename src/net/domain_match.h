// The egress proxy's allow-list: which host:port pairs a sandbox may reach by name.
// Entries: "example.org" (exactly that name), "*.example.org" (its subdomains, not the name itself),
// IP literals ("192.0.2.7", "[2001:db8::1]"), each optionally with ":port". Without a port an entry
// opens 80 and 443 only. Names compare case-insensitively and ignore one trailing dot.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::net {

// True when some entry allows host:port; `rule` (optional) receives that entry as written.
// `host` is a name or an IP literal without brackets, as RequestHead::host holds it.
bool domain_allowed(const std::vector<std::string>& allow, std::string_view host, uint16_t port, std::string* rule);

// True when some entry names `host` on any port (to explain a refusal by port rather than by name).
bool host_listed(const std::vector<std::string>& allow, std::string_view host);

// A deny-list (`tnk sandbox deny`): true when some entry covers host:port. Unlike an allow entry, one
// without a port covers every port of its names. `rule` (optional) receives that entry.
bool domain_denied(const std::vector<std::string>& deny, std::string_view host, uint16_t port, std::string* rule);

// How the proxy enforces an entry, for `tnk sandbox policy`: "name example.org, ports 80 and 443",
// "subdomains of example.org, port 8443", "address 192.0.2.7, every port" (a deny without a port).
std::string enforcement_text(std::string_view entry, bool deny);

// Checks one entry's syntax for config loaders; the error names the entry and shows the accepted forms.
Status check_allow_entry(std::string_view entry);

}  // namespace tnk::net
