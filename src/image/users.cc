#include "image/users.h"

#include "state/store.h"

namespace tnk::image {

std::vector<std::string> ImageUsers::users_of(const std::string& image_id) const {
  std::vector<std::string> users;
  if (auto it = by_image.find(image_id); it != by_image.end()) users = it->second;
  for (const auto& id : unreadable) users.push_back(id + " (unreadable record)");
  return users;
}

Result<ImageUsers> image_users(const Paths& paths) {
  state::Store store(paths.sandboxes_dir());
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> ids, store.list_ids());
  ImageUsers users;
  for (const auto& id : ids) {
    auto record = store.load(id);
    if (!record) {
      users.unreadable.push_back(id);
    } else if (*record && !(*record)->image_id.empty()) {
      users.by_image[(*record)->image_id].push_back(id);
    }
  }
  return users;
}

}  // namespace tnk::image
