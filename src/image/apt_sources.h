// The host's apt sources: which mirrors this machine's apt already uses. The image is built from
// them (never from a mirror named in our code), and the `@debian` allow-list name expands to their
// host names. Reads sources.list, sources.list.d/*.list (one-line format) and
// sources.list.d/*.sources (deb822), keeping only enabled binary (`deb`) entries.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::image {

struct AptSource {
  std::string uri;                      // e.g. http://<mirror>/debian (as written, trailing '/' removed)
  std::vector<std::string> suites;      // e.g. bookworm, bookworm-updates
  std::vector<std::string> components;  // e.g. main; empty for a flat repository ("./")
  std::string signed_by;                // a keyring path, or "" (none, or a key embedded in the file)
  std::filesystem::path file;           // where it was read, for messages
};

// Every enabled `deb` entry in apt's order: sources.list first, then sources.list.d/ sorted by
// name. A deb822 stanza with several URIs gives one AptSource per URI. Missing files and
// directories are not errors; an unreadable file or a malformed entry is (file:line in the message).
Result<std::vector<AptSource>> read_apt_sources(const std::filesystem::path& etc_apt = "/etc/apt");

// Parsers for one file's text (exposed for tests); `file` only names the source in errors.
Result<std::vector<AptSource>> parse_one_line_sources(std::string_view text, const std::filesystem::path& file);
Result<std::vector<AptSource>> parse_deb822_sources(std::string_view text, const std::filesystem::path& file);

// The host names of the sources' URIs (lowercase, without port or credentials), each once, in
// order of first appearance. URIs without a network host (file:, cdrom:, mirror+file:) add none.
std::vector<std::string> apt_source_hosts(const std::vector<AptSource>& sources);
// "http://u:p@Host.Example:8080/x" -> "host.example"; "" when the URI names no network host.
std::string uri_host(std::string_view uri);

// Which Debian archive a source is, judged by its suite names only (no host names in our code):
// kMain for a release codename or alias (bookworm, stable, sid ...), kUpdates for <release>-updates,
// kSecurity for <release>-security (or the old <release>/updates), kOther for anything else
// (backports, third-party repositories).
enum class DebianRole { kMain, kUpdates, kSecurity, kOther };
DebianRole debian_role(std::string_view suite);

// The sources that are Debian archives (a suite with a role other than kOther, over http or https):
// the `@debian` registry and the image recipe use these.
std::vector<AptSource> debian_sources(const std::vector<AptSource>& sources);

}  // namespace tnk::image
