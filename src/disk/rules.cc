#include "disk/rules.h"

#include <charconv>

namespace tnk::disk {
namespace {

bool key_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

}  // namespace

bool valid_key(std::string_view key) {
  if (key.empty() || key.size() > 100 || key.find("..") != std::string_view::npos) return false;
  if (key.front() == '.' || key.front() == '_' || key.front() == '-') return false;
  for (char c : key) {
    if (!key_char(c)) return false;
  }
  return true;
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > (1ull << 62)) return std::nullopt;
  return value;
}

std::optional<uint64_t> allowance_for(std::string_view conf, std::string_view user) {
  std::optional<uint64_t> found;
  while (!conf.empty()) {
    size_t end = conf.find('\n');
    std::string_view line = conf.substr(0, end);
    conf = end == std::string_view::npos ? std::string_view() : conf.substr(end + 1);
    line = trim(line.substr(0, line.find('#')));
    size_t gap = line.find_first_of(" \t");
    if (gap == std::string_view::npos || line.substr(0, gap) != user) continue;
    if (auto bytes = parse_bytes(trim(line.substr(gap)))) found = bytes;
  }
  return found;
}

std::string with_allowance(std::string_view conf, std::string_view user, uint64_t bytes) {
  std::string out;
  while (!conf.empty()) {
    size_t end = conf.find('\n');
    std::string_view line = conf.substr(0, end);
    conf = end == std::string_view::npos ? std::string_view() : conf.substr(end + 1);
    std::string_view words = trim(line.substr(0, line.find('#')));
    if (words.substr(0, words.find_first_of(" \t")) == user) continue;
    out.append(line).push_back('\n');
  }
  if (out.empty()) out = "# tnk-disk's allowances (docs/ns-backend.md, \"Disk\"): NAME BYTES, by `sudo tnk setup`\n";
  return out + std::string(user) + " " + std::to_string(bytes) + "\n";
}

std::string images_dir(uid_t uid) { return std::string(kImagesDir) + "/" + std::to_string(uid); }

std::string image_path(uid_t uid, std::string_view key) { return images_dir(uid) + "/" + std::string(key) + ".ext4"; }

bool is_users_image(std::string_view backing_file, uid_t uid) {
  std::string prefix = images_dir(uid) + "/";
  if (!backing_file.empty() && backing_file.back() == '\n') backing_file.remove_suffix(1);
  constexpr std::string_view kDeleted = " (deleted)";
  if (backing_file.ends_with(kDeleted)) backing_file.remove_suffix(kDeleted.size());
  if (!backing_file.starts_with(prefix) || !backing_file.ends_with(".ext4")) return false;
  std::string_view name = backing_file.substr(prefix.size());
  name.remove_suffix(5);
  return valid_key(name);
}

std::string mkfs_root_owner(uid_t uid, gid_t gid) {
  return "root_owner=" + std::to_string(uid) + ":" + std::to_string(gid) + ",lazy_itable_init=1,lazy_journal_init=1";
}

}  // namespace tnk::disk
