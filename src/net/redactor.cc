#include "net/redactor.h"

#include <utility>

#include "net/secret_match.h"

namespace tnk::net {

Redactor::Redactor(std::vector<std::string> secrets) {
  for (std::string& secret : secrets) {
    if (!secret.empty()) secrets_.push_back(std::move(secret));
  }
}

std::string Redactor::feed(std::string_view piece) {
  pending_.append(piece);
  return pass(false);
}

std::string Redactor::finish() { return pass(true); }

// Masks every occurrence that starts before the first place where one may still be forming; that place
// and what follows it wait (at most 6 bytes per byte of the longest secret: the longest form). A
// secret that may be forming there is decided before any other found there, so that two secrets
// sharing a beginning are masked whole.
std::string Redactor::pass(bool at_end) {
  std::size_t at = 0;
  while (at < pending_.size()) {
    std::size_t longest = 0;
    bool forming = false;
    for (const std::string& secret : secrets_) {
      SecretMatch match = match_secret(pending_, at, secret);
      if (match.kind == SecretMatch::kWhole && match.length > longest) longest = match.length;
      forming = forming || (match.kind == SecretMatch::kCut && !at_end);
    }
    if (forming) break;
    if (longest > 0) {
      pending_.replace(at, longest, longest, '*');
      at += longest;
    } else {
      ++at;
    }
  }
  std::string out = pending_.substr(0, at);
  pending_.erase(0, at);
  return out;
}

}  // namespace tnk::net
