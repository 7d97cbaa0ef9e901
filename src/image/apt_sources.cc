#include "image/apt_sources.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <system_error>

#include "core/files.h"

namespace tnk::image {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string where(const std::filesystem::path& file, size_t line) { return file.string() + ":" + std::to_string(line); }

std::string clean_uri(std::string uri) {
  while (uri.ends_with('/') && !uri.ends_with("//") && !uri.ends_with(":/")) uri.pop_back();
  return uri;
}

// A deb822 Signed-By value is a keyring path, fingerprints, or an embedded key; only a single
// path is something mmdebstrap and apt inside the image can use as is.
std::string keyring_path(std::string_view value) {
  auto tokens = words(value);
  if (tokens.size() == 1 && tokens[0].starts_with('/')) return tokens[0];
  return "";
}

bool is_false(std::string_view value) {
  static constexpr std::array<std::string_view, 6> kFalse = {"no", "false", "0", "off", "disable", "without"};
  std::string v = lower(trim(value));
  return std::find(kFalse.begin(), kFalse.end(), v) != kFalse.end();
}

Result<std::optional<AptSource>> parse_one_line(std::string_view line, const std::filesystem::path& file,
                                                size_t lineno) {
  auto bad = [&](const std::string& what) {
    return failed("malformed apt source at " + where(file, lineno) + ": " + what,
                  "fix or comment out that line (apt itself rejects it too)");
  };
  size_t type_end = line.find_first_of(" \t[");
  std::string_view type = line.substr(0, type_end);
  if (type != "deb" && type != "deb-src") return bad("unknown type '" + std::string(type) + "'");
  std::string_view rest = type_end == std::string_view::npos ? std::string_view() : trim(line.substr(type_end));
  AptSource source;
  source.file = file;
  if (rest.starts_with('[')) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("'[' without ']'");
    for (const auto& option : words(rest.substr(1, close - 1))) {
      if (option.starts_with("signed-by=")) source.signed_by = keyring_path(option.substr(10));
    }
    rest = trim(rest.substr(close + 1));
  }
  auto fields = words(rest);
  if (fields.size() < 2) return bad("expected a URI and a suite");
  if (type == "deb-src") return std::optional<AptSource>();
  source.uri = clean_uri(fields[0]);
  source.suites = {fields[1]};
  source.components.assign(fields.begin() + 2, fields.end());
  if (fields[1].ends_with('/') && !source.components.empty()) return bad("a suite ending in '/' takes no components");
  if (!fields[1].ends_with('/') && source.components.empty()) return bad("no component after the suite");
  return std::optional<AptSource>(std::move(source));
}

struct Stanza {
  size_t line = 0;
  std::map<std::string, std::string> fields;  // lowercase key -> value (continuation lines joined by '\n')
};

Result<std::vector<Stanza>> split_stanzas(std::string_view text, const std::filesystem::path& file) {
  std::vector<Stanza> stanzas;
  Stanza current;
  std::string last_key;
  auto finish = [&] {
    if (!current.fields.empty()) stanzas.push_back(std::move(current));
    current = Stanza{};
    last_key.clear();
  };
  auto lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.starts_with('#')) continue;
    if (trim(line).empty()) {
      finish();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (last_key.empty())
        return failed("malformed apt source at " + where(file, i + 1) +
                          ": continuation line "
                          "without a field",
                      "fix that line (apt itself rejects it too)");
      current.fields[last_key] += "\n" + std::string(trim(line));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return failed("malformed apt source at " + where(file, i + 1) + ": expected 'Field: value'",
                    "fix that line (apt itself rejects it too)");
    }
    if (current.fields.empty()) current.line = i + 1;
    last_key = lower(trim(line.substr(0, colon)));
    current.fields[last_key] = std::string(trim(line.substr(colon + 1)));
  }
  finish();
  return stanzas;
}

Status add_stanza(const Stanza& stanza, const std::filesystem::path& file, std::vector<AptSource>& out) {
  auto get = [&](const char* key) -> std::string {
    auto it = stanza.fields.find(key);
    return it == stanza.fields.end() ? std::string() : it->second;
  };
  auto types = words(get("types"));
  if (std::find(types.begin(), types.end(), "deb") == types.end()) return ok_status();
  if (stanza.fields.contains("enabled") && is_false(get("enabled"))) return ok_status();
  auto uris = words(get("uris"));
  auto suites = words(get("suites"));
  auto components = words(get("components"));
  auto bad = [&](const std::string& what) {
    return failed("malformed apt source at " + where(file, stanza.line) + ": " + what,
                  "fix that entry (apt itself rejects it too)");
  };
  if (uris.empty()) return bad("no URIs");
  if (suites.empty()) return bad("no Suites");
  bool flat = std::all_of(suites.begin(), suites.end(), [](const std::string& s) { return s.ends_with('/'); });
  if (!flat && components.empty()) return bad("no Components");
  for (const auto& uri : uris) {
    out.push_back(AptSource{clean_uri(uri), suites, flat ? std::vector<std::string>() : components,
                            keyring_path(get("signed-by")), file});
  }
  return ok_status();
}

// apt reads only names made of [A-Za-z0-9_.-] ending in .list or .sources from sources.list.d.
bool apt_reads(const std::string& name) {
  bool charset = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  return charset && (name.ends_with(".list") || name.ends_with(".sources"));
}

Status read_into(const std::filesystem::path& file, std::vector<AptSource>& out) {
  TNK_ASSIGN_OR_RETURN(std::string text, read_file(file));
  auto parsed = file.extension() == ".sources" ? parse_deb822_sources(text, file) : parse_one_line_sources(text, file);
  if (!parsed) return std::move(parsed).error();
  for (auto& source : *parsed) out.push_back(std::move(source));
  return ok_status();
}

}  // namespace

Result<std::vector<AptSource>> parse_one_line_sources(std::string_view text, const std::filesystem::path& file) {
  std::vector<AptSource> sources;
  auto lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    TNK_ASSIGN_OR_RETURN(std::optional<AptSource> source, parse_one_line(line, file, i + 1));
    if (source) sources.push_back(std::move(*source));
  }
  return sources;
}

Result<std::vector<AptSource>> parse_deb822_sources(std::string_view text, const std::filesystem::path& file) {
  TNK_ASSIGN_OR_RETURN(std::vector<Stanza> stanzas, split_stanzas(text, file));
  std::vector<AptSource> sources;
  for (const auto& stanza : stanzas) TNK_RETURN_IF_ERROR(add_stanza(stanza, file, sources));
  return sources;
}

Result<std::vector<AptSource>> read_apt_sources(const std::filesystem::path& etc_apt) {
  std::vector<AptSource> sources;
  std::error_code ec;
  auto list = etc_apt / "sources.list";
  if (std::filesystem::exists(list, ec)) TNK_RETURN_IF_ERROR(read_into(list, sources));
  auto parts = etc_apt / "sources.list.d";
  if (!std::filesystem::is_directory(parts, ec)) return sources;
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(parts, ec);
  if (ec) return sys_error(ec.value(), "cannot list " + parts.string());
  for (const auto& entry : it) {
    if (apt_reads(entry.path().filename().string()) && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) TNK_RETURN_IF_ERROR(read_into(file, sources));
  return sources;
}

std::string uri_host(std::string_view uri) {
  size_t scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) return "";
  std::string_view scheme = uri.substr(0, scheme_end);
  if (scheme.ends_with("+file") || scheme == "file" || scheme == "cdrom" || scheme == "copy") return "";
  std::string_view authority = uri.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  if (authority.starts_with('[')) {
    size_t close = authority.find(']');
    return close == std::string_view::npos ? "" : lower(authority.substr(1, close - 1));
  }
  return lower(authority.substr(0, authority.find(':')));
}

std::vector<std::string> apt_source_hosts(const std::vector<AptSource>& sources) {
  std::vector<std::string> hosts;
  for (const auto& source : sources) {
    std::string host = uri_host(source.uri);
    if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  return hosts;
}

DebianRole debian_role(std::string_view suite) {
  static constexpr std::array<std::string_view, 12> kReleases = {"buster",    "bullseye", "bookworm", "trixie",
                                                                 "forky",     "duke",     "sid",      "oldoldstable",
                                                                 "oldstable", "stable",   "testing",  "unstable"};
  auto is_release = [](std::string_view s) {
    return std::find(kReleases.begin(), kReleases.end(), s) != kReleases.end();
  };
  if (is_release(suite)) return DebianRole::kMain;
  for (auto [suffix, role] : {std::pair<std::string_view, DebianRole>{"-updates", DebianRole::kUpdates},
                              {"-security", DebianRole::kSecurity},
                              {"/updates", DebianRole::kSecurity}}) {
    if (suite.ends_with(suffix) && is_release(suite.substr(0, suite.size() - suffix.size()))) return role;
  }
  return DebianRole::kOther;
}

std::vector<AptSource> debian_sources(const std::vector<AptSource>& sources) {
  std::vector<AptSource> out;
  for (const auto& source : sources) {
    std::string scheme = lower(source.uri.substr(0, source.uri.find("://")));
    if (scheme != "http" && scheme != "https") continue;
    if (std::any_of(source.suites.begin(), source.suites.end(),
                    [](const std::string& s) { return debian_role(s) != DebianRole::kOther; })) {
      out.push_back(source);
    }
  }
  return out;
}

}  // namespace tnk::image
