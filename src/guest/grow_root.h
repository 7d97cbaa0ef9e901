// The guest's root file system grown to fill its disk, at boot. The base disk's ext4 is only as big as
// the image (a few hundred MB, with little room to install anything); the sandbox's qcow2 overlay has the
// size of its manifest's resources.disk. ext4 grows online, mounted, so the first boot of a sandbox
// grows it once and every later boot finds nothing to do.
#pragma once

#include <string>

namespace tnk::guest {

// What it did, for the console ("grew / from 496 MiB to 8192 MiB"), or why it could not; empty when
// the file system already fills its disk or is not ext4.
std::string grow_root_fs();

}  // namespace tnk::guest
