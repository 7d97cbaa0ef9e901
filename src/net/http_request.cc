#include "net/http_request.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cerrno>
#include <cstdio>

#include "net/port.h"

namespace tnk::net {
namespace {

Error too_large() {
  Error e = failed("request head larger than " + std::to_string(kMaxRequestHeadBytes / 1024) + " KiB");
  e.sys_errno = EMSGSIZE;
  return e;
}

bool is_tchar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

// Control bytes (other than tab) never belong in a head, and lines end in CRLF, never in a bare LF or CR.
Status check_bytes(std::string_view head) {
  for (size_t i = 0; i < head.size(); ++i) {
    auto c = static_cast<unsigned char>(head[i]);
    if (c == '\n' && (i == 0 || head[i - 1] != '\r')) return bad_request("a line ends in LF without CR");
    if (c == '\r' && i + 1 < head.size() && head[i + 1] != '\n') return bad_request("a CR inside a line");
    if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      return bad_request(std::string("control byte ") + hex);
    }
  }
  return ok_status();
}

Result<uint16_t> parse_request_port(std::string_view text) {
  auto port = parse_port(text);
  if (!port) return bad_request("invalid port \"" + std::string(text) + "\"");
  return *port;
}

bool valid_reg_name(std::string_view host) {
  if (host.empty() || host.size() > 254) return false;
  for (char c : host) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

// "host[:port]" or "[v6][:port]" into head.host/head.port; `default_port` 0 means the port is required.
Status parse_authority(std::string_view text, uint16_t default_port, RequestHead& head) {
  if (text.find('@') != std::string_view::npos) return bad_request("user info in \"" + std::string(text) + "\"");
  std::string_view host = text;
  std::optional<std::string_view> port;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos)
      return bad_request("unterminated IPv6 literal in \"" + std::string(text) + "\"");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return bad_request("junk after the IPv6 literal in \"" + std::string(text) + "\"");
    if (!rest.empty()) port = rest.substr(1);
    in6_addr unused;
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &unused) != 1) {
      return bad_request("invalid IPv6 literal \"" + std::string(host) + "\"");
    }
  } else {
    size_t colon = text.find(':');
    if (colon != std::string_view::npos) port = text.substr(colon + 1);
    host = text.substr(0, colon);
    if (!valid_reg_name(host)) return bad_request("invalid host \"" + std::string(host) + "\"");
  }
  head.host = ascii_lower(host);
  if (!port && default_port == 0) return bad_request("CONNECT needs host:port, got \"" + std::string(text) + "\"");
  if (!port) {
    head.port = default_port;
    return ok_status();
  }
  TNK_ASSIGN_OR_RETURN(head.port, parse_request_port(*port));
  return ok_status();
}

// Absolute-form "http://authority[/path][?query]": the only form a proxy serves besides CONNECT.
Status parse_absolute_target(RequestHead& head) {
  std::string_view target = head.target;
  if (target.starts_with('/') || target == "*") {
    return bad_request("the proxy needs an absolute URL (http://host/path) or CONNECT host:port, got \"" + head.target +
                       "\"");
  }
  size_t scheme_end = target.find("://");
  std::string scheme = ascii_lower(target.substr(0, scheme_end));
  if (scheme_end == std::string_view::npos || (scheme != "http" && scheme != "https")) {
    return bad_request("only http:// URLs and CONNECT are proxied, got \"" + head.target + "\"");
  }
  if (scheme == "https") return bad_request("https:// URLs must go through CONNECT, got \"" + head.target + "\"");
  std::string_view rest = target.substr(scheme_end + 3);
  size_t path_start = rest.find_first_of("/?#");
  TNK_RETURN_IF_ERROR(parse_authority(rest.substr(0, path_start), 80, head));
  std::string_view path = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (path.find('#') != std::string_view::npos) return bad_request("a fragment in \"" + head.target + "\"");
  head.path = path.starts_with('/') ? std::string(path) : "/" + std::string(path);
  return ok_status();
}

// Origin-form "/path[?query]": what a server (the inference forwarder) is sent; `path` is the target.
Status parse_origin_target(RequestHead& head) {
  if (!head.target.starts_with('/')) {
    return bad_request("only origin-form targets (/path) are accepted here, got \"" + head.target + "\"");
  }
  if (head.target.find('#') != std::string::npos) return bad_request("a fragment in \"" + head.target + "\"");
  head.path = head.target;
  return ok_status();
}

Status parse_request_line(std::string_view line, RequestForm form, RequestHead& head) {
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad_request("the request line is not \"METHOD target HTTP/1.x\"");
  }
  head.method = std::string(line.substr(0, sp1));
  head.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  head.version = std::string(line.substr(sp2 + 1));
  if (!is_token(head.method)) return bad_request("invalid method");
  // Only upper-case methods: "connect" is not CONNECT, and guessing would differ between peers.
  for (char c : head.method) {
    if (std::islower(static_cast<unsigned char>(c)) != 0)
      return bad_request("method \"" + head.method + "\" is not upper-case");
  }
  if (head.version != "HTTP/1.1" && head.version != "HTTP/1.0")
    return bad_request("unsupported version \"" + head.version + "\"");
  if (head.target.empty()) return bad_request("empty request target");
  for (char c : head.target) {
    if (static_cast<unsigned char>(c) >= 0x80 || c == '\t') return bad_request("invalid byte in the request target");
  }
  if (form == RequestForm::kOrigin) return parse_origin_target(head);
  head.is_connect = head.method == "CONNECT";
  if (head.is_connect) return parse_authority(head.target, 0, head);
  return parse_absolute_target(head);
}

Status parse_header_line(std::string_view line, RequestHead& head) {
  if (line.front() == ' ' || line.front() == '\t') return bad_request("obsolete header line folding");
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return bad_request("a header line without ':'");
  std::string_view name = line.substr(0, colon);
  if (!is_token(name)) return bad_request("invalid header name \"" + std::string(name) + "\"");
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  head.headers.emplace_back(std::string(name), std::string(value));
  return ok_status();
}

Status check_host_headers(const RequestHead& head) {
  int count = 0;
  for (const auto& [name, value] : head.headers) {
    if (ascii_lower(name) == "host") ++count;
  }
  if (count > 1) return bad_request("more than one Host header");
  if (count == 0 && !head.is_connect && head.version == "HTTP/1.1")
    return bad_request("an HTTP/1.1 request without Host");
  return ok_status();
}

Result<RequestHead> parse_complete(std::string_view head_text, RequestForm form) {
  RequestHead head;
  head.head_bytes = head_text.size() + 4;
  size_t line_end = head_text.find("\r\n");
  TNK_RETURN_IF_ERROR(parse_request_line(head_text.substr(0, line_end), form, head));
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head_text.find("\r\n", start);
    TNK_RETURN_IF_ERROR(parse_header_line(head_text.substr(start, line_end - start), head));
  }
  TNK_RETURN_IF_ERROR(check_host_headers(head));
  return head;
}

// Header names (lowercased) that the Connection and Proxy-Connection headers list: hop-by-hop too.
std::vector<std::string> connection_tokens(const RequestHead& head) {
  std::vector<std::string> tokens;
  for (const auto& [name, value] : head.headers) {
    std::string key = ascii_lower(name);
    if (key != "connection" && key != "proxy-connection") continue;
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      std::string token =
          ascii_lower(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      token.erase(0, token.find_first_not_of(" \t"));
      token.erase(token.find_last_not_of(" \t") + 1);
      if (!token.empty()) tokens.push_back(token);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return tokens;
}

bool dropped_upstream(const std::string& key, const std::vector<std::string>& listed) {
  // The body travels as received, so its framing headers stay whatever Connection lists.
  if (key == "content-length" || key == "transfer-encoding") return false;
  for (const char* name : {"host", "connection", "proxy-connection", "keep-alive", "proxy-authorization"}) {
    if (key == name) return true;
  }
  for (const std::string& token : listed) {
    if (key == token) return true;
  }
  return false;
}

}  // namespace

Result<std::optional<RequestHead>> parse_request_head(std::string_view buffered, RequestForm form) {
  size_t end = buffered.find("\r\n\r\n");
  std::string_view seen = end == std::string_view::npos ? buffered : buffered.substr(0, end + 4);
  if (seen.size() > kMaxRequestHeadBytes) return too_large();
  TNK_RETURN_IF_ERROR(check_bytes(seen));
  if (end == std::string_view::npos) {
    // Judge a complete request line early so that garbage is answered now, not at the head timeout.
    size_t line_end = buffered.find("\r\n");
    if (line_end != std::string_view::npos) {
      RequestHead probe;
      TNK_RETURN_IF_ERROR(parse_request_line(buffered.substr(0, line_end), form, probe));
    }
    return std::optional<RequestHead>();
  }
  TNK_ASSIGN_OR_RETURN(RequestHead head, parse_complete(buffered.substr(0, end), form));
  return std::optional<RequestHead>(std::move(head));
}

int http_status_for(const Error& parse_error) { return parse_error.sys_errno == EMSGSIZE ? 431 : 400; }

std::string origin_form_head(const RequestHead& head) {
  std::string out = head.method + " " + head.path + " " + head.version + "\r\n";
  out += "Host: " + host_port_text(head.host, head.port, head.port != 80) + "\r\n";
  std::vector<std::string> listed = connection_tokens(head);
  for (const auto& [name, value] : head.headers) {
    if (dropped_upstream(ascii_lower(name), listed)) continue;
    out += name + ": " + value + "\r\n";
  }
  out += "Connection: close\r\n\r\n";
  return out;
}

Error bad_request(const std::string& what) {
  Error e = failed("bad request: " + printable_ascii(what));
  e.sys_errno = EBADMSG;
  return e;
}

std::string printable_ascii(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out += c;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", byte);
    out += hex;
  }
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string host_port_text(const std::string& host, uint16_t port, bool with_port) {
  std::string text = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (with_port) text += ":" + std::to_string(port);
  return text;
}

}  // namespace tnk::net
