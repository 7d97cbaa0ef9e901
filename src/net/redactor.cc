#include "net/redactor.h"

#include <algorithm>
#include <utility>

namespace tnk::net {

Redactor::Redactor(std::vector<std::string> secrets) {
  for (std::string& secret : secrets) {
    if (secret.empty()) continue;
    hold_ = std::max(hold_, secret.size() - 1);
    secrets_.push_back(std::move(secret));
  }
}

// Every occurrence in `pending_` is masked before the split, so one that starts in the part passed on
// ends inside `pending_` and was masked whole.
std::string Redactor::feed(std::string_view piece) {
  pending_.append(piece);
  for (const std::string& secret : secrets_) {
    for (std::size_t at = pending_.find(secret); at != std::string::npos; at = pending_.find(secret, at + 1)) {
      pending_.replace(at, secret.size(), secret.size(), '*');
    }
  }
  if (pending_.size() <= hold_) return {};
  std::string out = pending_.substr(0, pending_.size() - hold_);
  pending_.erase(0, out.size());
  return out;
}

std::string Redactor::finish() { return std::exchange(pending_, {}); }

}  // namespace tnk::net
