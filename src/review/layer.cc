#include "review/layer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/files.h"
#include "state/layout.h"
#include "state/own_disk.h"

namespace tnk::review {

Layer layer_in(const std::filesystem::path& state_dir) {
  state::NsLayers layers = state::ns_layers(state_dir);
  return {state_dir / state::kReviewDir, layers.review_upper, layers.review_work,
          state_dir / state::kReviewBaselineFile};
}

Status ensure_layer(const Layer& layer, const std::filesystem::path& project) {
  std::error_code ec;
  if (std::filesystem::exists(layer.baseline, ec)) return ok_status();
  TNK_RETURN_IF_ERROR(make_dirs(layer.dir, 0700));  // the baseline's; the layer may be on a disk of its own
  TNK_RETURN_IF_ERROR(make_dirs(layer.upper, 0700));
  TNK_RETURN_IF_ERROR(make_dirs(layer.work, 0700));
  TNK_ASSIGN_OR_RETURN(Baseline baseline, take_baseline(project));
  return write_layer_baseline(layer, baseline);
}

bool layer_in_use(const Layer& layer) {
  std::error_code ec;
  return std::filesystem::is_directory(layer.upper, ec) && !std::filesystem::is_empty(layer.upper, ec);
}

Status prepare_layer_top(const std::filesystem::path& upper, const std::filesystem::path& project,
                         std::optional<Owner> owner) {
  TNK_RETURN_IF_ERROR(make_dirs(upper, 0700));
  struct stat st {};
  if (::stat(project.c_str(), &st) != 0) return sys_error(errno, "checking the project " + project.string());
  if (::chmod(upper.c_str(), st.st_mode & 07777) != 0) {
    return sys_error(errno, "setting the mode of the review layer " + upper.string());
  }
  if (owner && ::lchown(upper.c_str(), owner->uid, owner->gid) != 0) {
    return sys_error(errno, "giving the review layer " + upper.string() + " to the sandbox's agent");
  }
  return ok_status();
}

Result<Baseline> read_layer_baseline(const Layer& layer) {
  auto text = read_file(layer.baseline);
  if (!text) {
    return text.error()
        .context("reading the review layer's baseline")
        .with_hint("`tnk sandbox discard` drops the layer; the next start in review mode makes a new one");
  }
  return parse_baseline(*text, layer.baseline.string());
}

Status write_layer_baseline(const Layer& layer, const Baseline& baseline) {
  return write_file_atomic(layer.baseline, serialize_baseline(baseline), 0600);
}

}  // namespace tnk::review
