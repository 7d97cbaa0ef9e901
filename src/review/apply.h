// Writing a review layer's changes into the project, and dropping them. Dropping changes the layer,
// which overlayfs forbids under a mounted overlay: the caller has the sandbox stopped. Applying works
// on a running sandbox too (LayerAfter::kKept).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "review/baseline.h"
#include "review/diff.h"

namespace tnk::review {

// One path an apply wrote or removed, or a discard dropped, for the audit record.
struct Touched {
  std::string path;
  ChangeKind kind = ChangeKind::kAdded;
  EntryType type = EntryType::kNone;
  std::string sha256;  // the content written (a file's bytes, a link's target); a deletion: what was removed
};

// The changes whose host path no longer matches the baseline (changed on the host since the layer was
// made), each with a reason. Also refuses what apply never writes (a device, fifo or socket).
Result<std::vector<std::string>> conflicts(int project_fd, const Baseline& baseline,
                                           const std::vector<Change>& changes);

// What becomes of an applied change's entry in the layer. kTakenOut: it leaves (but below an opaque
// directory, where the copy stays and matches the project), for a sandbox that is stopped. kKept: the
// layer is not touched, for a sandbox that runs: overlayfs does not allow its upper directory to
// change under a mounted overlay, and every applied path is one the layer's entry (a file, link,
// directory or whiteout) shadows, so writing the project below it changes nothing the sandbox sees;
// the layer's copy then matches the project and `diff` no longer lists it.
enum class LayerAfter { kTakenOut, kKept };

// Applies `changes` (checked with conflicts() first): each file written to a temporary name beside its
// target and renamed over it, with setuid and setgid bits dropped, every directory opened without
// following a link; then deals with the layer's entry as `after` says and updates `baseline`.
Result<std::vector<Touched>> apply_changes(int upper_fd, int project_fd, const std::vector<Change>& changes,
                                           Baseline& baseline, LayerAfter after);

// What discarding `changes` drops, with the layer's content hashes (nothing is removed here).
Result<std::vector<Touched>> describe_layer(int upper_fd, const std::vector<Change>& changes);

// Empties the directory `dir` (the layer's upper or work directory), never following a link.
Status empty_dir(int dir, const std::string& what);

}  // namespace tnk::review
