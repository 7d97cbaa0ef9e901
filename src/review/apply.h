// Writing a review layer's changes into the project, and dropping them. The caller has the sandbox
// stopped: overlayfs forbids changing its upper or lower directory under a mounted overlay.
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

// Applies `changes` (checked with conflicts() first): each file written to a temporary name beside its
// target and renamed over it, with setuid and setgid bits dropped, every directory opened without
// following a link; then takes it out of the layer (but below an opaque directory, where the copy
// stays and matches the project) and updates `baseline`.
Result<std::vector<Touched>> apply_changes(int upper_fd, int project_fd, const std::vector<Change>& changes,
                                           Baseline& baseline);

// What discarding `changes` drops, with the layer's content hashes (nothing is removed here).
Result<std::vector<Touched>> describe_layer(int upper_fd, const std::vector<Change>& changes);

// Empties the directory `dir` (the layer's upper or work directory), never following a link.
Status empty_dir(int dir, const std::string& what);

}  // namespace tnk::review
