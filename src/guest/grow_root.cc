#include "guest/grow_root.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/ext4_size.h"
#include "core/files.h"
#include "core/unique_fd.h"

// The kernel's ext4 online resize (fs/ext4/ext4.h; not in the uapi headers): the new block count.
#define TNK_EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t)

namespace tnk::guest {
namespace {

// The device node of the root file system: no udev in the guest, so sysfs names it and devtmpfs has it.
std::string root_device() {
  struct stat root {};
  if (::stat("/", &root) != 0) return "";
  auto uevent = read_file("/sys/dev/block/" + std::to_string(major(root.st_dev)) + ":" +
                          std::to_string(minor(root.st_dev)) + "/uevent");
  if (!uevent) return "";
  size_t at = uevent->find("DEVNAME=");
  if (at == std::string::npos) return "";
  at += 8;
  return "/dev/" + uevent->substr(at, uevent->find('\n', at) - at);
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string grow_root_fs() {
  std::string device = root_device();
  if (device.empty()) return "";
  UniqueFd dev(::open(device.c_str(), O_RDONLY | O_CLOEXEC));
  uint64_t device_bytes = 0;
  std::string superblock(agent::kExt4SuperblockSize, '\0');
  if (!dev.valid() || ::ioctl(dev.get(), BLKGETSIZE64, &device_bytes) != 0 ||
      ::pread(dev.get(), superblock.data(), superblock.size(), agent::kExt4SuperblockOffset) !=
          static_cast<ssize_t>(superblock.size())) {
    return "cannot read the size of " + device + ": " + std::strerror(errno);
  }
  auto fs = agent::parse_ext4_superblock(superblock);
  if (!fs) return "";
  auto target = agent::ext4_blocks_to_grow_to(*fs, device_bytes);
  if (!target) return "";
  UniqueFd root(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  uint64_t blocks = *target;
  if (!root.valid() || ::ioctl(root.get(), TNK_EXT4_IOC_RESIZE_FS, &blocks) != 0) {
    return "cannot grow / to its disk (" + mib(device_bytes) + "): " + std::strerror(errno);
  }
  return "grew / from " + mib(fs->blocks * fs->block_size) + " to " + mib(blocks * fs->block_size);
}

}  // namespace tnk::guest
