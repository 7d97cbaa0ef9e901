// Which sandboxes use which image: read from the sandbox records (their `image_id`), so that an
// image is not removed or rebuilt under a sandbox whose overlay or disk sits on it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/paths.h"
#include "core/result.h"

namespace tnk::image {

struct ImageUsers {
  std::map<std::string, std::vector<std::string>> by_image;  // image id -> sandbox ids, sorted
  std::vector<std::string> unreadable;  // sandboxes whose record cannot be read: they may use any image

  // The sandboxes that use (or may use) `image_id`; unreadable ones are named "<id> (unreadable record)".
  std::vector<std::string> users_of(const std::string& image_id) const;
};

// A missing sandboxes directory means no users.
Result<ImageUsers> image_users(const Paths& paths);

}  // namespace tnk::image
