// tnk-disk: gives an ns sandbox a disk of its own size, so that a write past its resources.disk fails
// inside (ENOSPC) instead of being measured after the fact (issue 32 item 3; docs/ns-backend.md, "Disk").
// An ordinary user cannot mount a file system that keeps its files, so this is the one part of tnk that
// runs as root for them: set-user-id root, made so by `sudo tnk setup --user NAME`, which also writes the
// user's allowance (disk/rules.h). It does three things and nothing else:
//   tnk-disk attach KEY DIR BYTES [--fresh]   mount the user's image KEY (made, or grown, to BYTES) on DIR
//   tnk-disk detach DIR                       unmount the user's image mounted on DIR
//   tnk-disk remove KEY                       delete the user's image KEY
// The images are root's files (/var/lib/tnk/disks/<uid>/KEY.ext4, 0600): the user reaches them only
// through the kernel's ext4, never as bytes, so no crafted image is ever mounted. DIR must be the user's
// directory; the mount is made on the directory that was opened and checked (the new mount API, by file
// descriptor), so no path can be swapped between the check and the mount. Nothing of the caller's
// environment is used. Exit codes: 0 done, 2 usage, 77 refused, 1 failed; one line on stderr says why.
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "disk/rules.h"

namespace {

using namespace tnk::disk;

constexpr int kFailed = 1, kUsage = 2, kRefused = 77;
constexpr unsigned kLoopMajor = 7;
constexpr int kMntDetach = 2;  // <sys/mount.h>'s MNT_DETACH: that header and <linux/mount.h> clash

[[noreturn]] void quit(int code, const std::string& why) {
  std::fprintf(stderr, "tnk-disk: %s\n", why.c_str());
  std::exit(code);
}

[[noreturn]] void quit_errno(const std::string& what) { quit(kFailed, what + ": " + std::strerror(errno)); }

struct Caller {
  uid_t uid;
  gid_t gid;
  std::string name;
};

// A small file's text (at most 64 KiB: the allowance file, a line of /proc or /sys).
std::string read_small(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while (text.size() < (64u << 10) && (n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

// Root's effective id, in the host's user namespace (where a set-user-id bit means host root), with
// the standard descriptors open; then root for real, so that the programs it starts are root's too.
Caller become_root() {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", O_RDWR) != fd) std::abort();
  }
  ::clearenv();
  Caller caller{::getuid(), ::getgid(), ""};
  if (::geteuid() != 0) quit(kRefused, "not installed set-user-id root: run `sudo tnk setup --user NAME`");
  unsigned long inside = 1, outside = 1, count = 0;
  if (std::sscanf(read_small("/proc/self/uid_map").c_str(), "%lu %lu %lu", &inside, &outside, &count) != 3 ||
      inside != 0 || outside != 0 || count != 4294967295ul) {
    quit(kRefused, "runs only in the host's user namespace");
  }
  struct passwd* pw = ::getpwuid(caller.uid);
  if (pw == nullptr) quit(kRefused, "user id " + std::to_string(caller.uid) + " has no name");
  caller.name = pw->pw_name;
  if (::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) quit_errno("becoming root");
  ::umask(077);
  return caller;
}

// The allowance file must be root's alone, like everything else the helper trusts.
uint64_t allowance(const Caller& caller) {
  if (caller.uid == 0) return UINT64_MAX;
  struct stat st {};
  if (::lstat(kAllowanceFile, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0) {
    quit(kRefused, std::string(kAllowanceFile) + " is missing or not root's alone: run `sudo tnk setup --user " +
                       caller.name + "`");
  }
  auto bytes = allowance_for(read_small(kAllowanceFile), caller.name);
  if (!bytes)
    quit(kRefused, caller.name + " has no disk allowance in " + kAllowanceFile + ": run `sudo tnk setup --user " +
                       caller.name + "`");
  return *bytes;
}

// The bytes of the user's images other than `key`'s (their sizes: what they can grow to).
uint64_t images_bytes_except(const Caller& caller, const std::string& key) {
  uint64_t total = 0;
  DIR* dir = ::opendir(images_dir(caller.uid).c_str());
  if (dir == nullptr) return 0;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == key + ".ext4" || !name.ends_with(".ext4")) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(dir);
  return total;
}

void run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path_var[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char lang[] = "LC_ALL=C";
  char* env[] = {path_var, lang, nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) quit(kFailed, "cannot run " + argv[0] + ": " + std::strerror(err));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    quit(kFailed, argv[0] + " failed (status " + std::to_string(status) + ")");
}

std::string program(const char* name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/"}) {
    std::string path = std::string(dir) + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  quit(kFailed, std::string(name) + " is not installed (Debian: e2fsprogs)");
}

// The user's directory, opened once: every later step uses this descriptor, never the path again.
int open_users_dir(const Caller& caller, const std::string& path) {
  int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) quit_errno("opening " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) quit_errno("checking " + path);
  if (st.st_uid != caller.uid) quit(kRefused, path + " is not " + caller.name + "'s");
  return fd;
}

// The loop device's backing file when `dir` is the top of a mount on a loop device, else "".
std::string mounted_backing(int dir) {
  struct stat here {
  }, parent{};
  if (::fstat(dir, &here) != 0 || ::fstatat(dir, "..", &parent, 0) != 0 || here.st_dev == parent.st_dev) return "";
  if (::major(here.st_dev) != kLoopMajor) return "?";
  return read_small("/sys/dev/block/" + std::to_string(::major(here.st_dev)) + ":" +
                    std::to_string(::minor(here.st_dev)) + "/loop/backing_file");
}

// Whether some loop device serves `image` now (one image mounted twice would be two file systems writing
// the same blocks).
bool image_in_use(const std::string& image) {
  DIR* dir = ::opendir("/sys/block");
  if (dir == nullptr) return false;
  bool used = false;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (!name.starts_with("loop")) continue;
    std::string backing = read_small("/sys/block/" + name + "/loop/backing_file");
    if (!backing.empty() && backing.back() == '\n') backing.pop_back();
    if (backing == image) used = true;
  }
  ::closedir(dir);
  return used;
}

// /dev/loopN of an open loop device.
std::string loop_name(int loop) {
  struct stat st {};
  if (::fstat(loop, &st) != 0) quit_errno("checking the loop device");
  return "/dev/loop" + std::to_string(::minor(st.st_rdev));
}

int loop_device_for(int image_fd, const std::string& image) {
  int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (control < 0) quit_errno("opening /dev/loop-control");
  for (int attempt = 0; attempt < 16; ++attempt) {
    int n = ::ioctl(control, LOOP_CTL_GET_FREE);
    if (n < 0) quit_errno("finding a free loop device");
    int loop = ::open(("/dev/loop" + std::to_string(n)).c_str(), O_RDWR | O_CLOEXEC);
    if (loop < 0) quit_errno("opening /dev/loop" + std::to_string(n));
    struct loop_config config {};
    config.fd = static_cast<__u32>(image_fd);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;  // the device goes with the last unmount
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), image.c_str(), LO_NAME_SIZE - 1);
    if (::ioctl(loop, LOOP_CONFIGURE, &config) == 0) {
      ::close(control);
      return loop;
    }
    int err = errno;
    ::close(loop);
    if (err != EBUSY) quit(kFailed, "setting up /dev/loop" + std::to_string(n) + ": " + std::strerror(err));
  }
  quit(kFailed, "every free loop device was taken by someone else first");
}

void mount_on(int loop, int dir, const std::string& what) {
  std::string device = loop_name(loop);  // what mountinfo and df show as the source
  int fs = static_cast<int>(::syscall(SYS_fsopen, "ext4", FSOPEN_CLOEXEC));
  if (fs < 0) quit_errno("opening ext4");
  if (::syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", device.c_str(), 0) != 0 ||
      ::syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    quit_errno("mounting " + what);
  }
  int mnt = static_cast<int>(::syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (mnt < 0) quit_errno("mounting " + what);
  if (::syscall(SYS_move_mount, mnt, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    quit_errno("mounting " + what);
  }
  ::close(mnt);
  ::close(fs);
}

// A new image of `bytes` with its file system, made under a name of its own and then linked into place,
// so that an image at its final name always holds a file system (a mkfs cut short leaves only the
// temporary name, which the next attempt removes).
void make_image(const Caller& caller, const std::string& path, uint64_t bytes) {
  std::string temporary = path + ".new";
  if (::unlink(temporary.c_str()) != 0 && errno != ENOENT) quit_errno("removing " + temporary);
  int fd = ::open(temporary.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT | O_EXCL, 0600);
  if (fd < 0) quit_errno("making " + temporary);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) quit_errno("sizing " + temporary);
  ::close(fd);
  run({program("mkfs.ext4"), "-q", "-F", "-m", "0", "-L", "tnk-sandbox", "-E", mkfs_root_owner(caller.uid, caller.gid),
       temporary});
  if (::link(temporary.c_str(), path.c_str()) != 0 && errno != EEXIST) quit_errno("placing " + path);
  ::unlink(temporary.c_str());
}

// The user's directory of images, made when missing and locked until this program ends: one request of
// a user at a time, so that two cannot both find room in the allowance, or both mount one image.
void lock_images(const Caller& caller) {
  std::string top = std::string(kImagesDir).substr(0, std::string(kImagesDir).rfind('/'));
  std::string dir = images_dir(caller.uid);
  for (const auto& [path, mode] : {std::pair{top, 0755}, {std::string(kImagesDir), 0700}, {dir, 0700}}) {
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) quit_errno("making " + path);
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) quit_errno("locking " + dir);
}

// An image still served by a loop device is never removed or mounted again: removed, it would hold its
// space outside the allowance; mounted twice, two file systems would write the same blocks. A disk just
// unmounted lazily is given two seconds to let go.
void refuse_if_in_use(const std::string& image, const std::string& key) {
  for (int tries = 0; image_in_use(image); ++tries) {
    if (tries == 20) quit(kRefused, "the disk " + key + " is still mounted: its sandbox must stop first");
    ::usleep(100 * 1000);
  }
}

// Opens the user's image, made when missing (or when `fresh`), grown when asked for more than it has.
void prepare_image(const Caller& caller, const std::string& key, uint64_t bytes, bool fresh) {
  std::string path = image_path(caller.uid, key);
  refuse_if_in_use(path, key);
  if (fresh && ::unlink(path.c_str()) != 0 && errno != ENOENT) quit_errno("removing the old " + path);
  if (::access(path.c_str(), F_OK) != 0) make_image(caller, path, bytes);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0)
    quit(kFailed, path + " is not root's file");
  // Grown before it is mounted (growing a mounted ext4 needs CAP_SYS_RESOURCE, which some hosts' root
  // lacks). It never shrinks: a smaller bound is kept by the watch, as before.
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    if (::truncate(path.c_str(), static_cast<off_t>(bytes)) != 0) quit_errno("growing " + path);
    run({program("e2fsck"), "-f", "-p", path});
    run({program("resize2fs"), path});
  }
}

int attach(const Caller& caller, const std::string& key, const std::string& path, uint64_t bytes, bool fresh) {
  if (bytes < kMinDiskBytes) quit(kUsage, "a disk has at least " + std::to_string(kMinDiskBytes >> 20) + " MiB");
  uint64_t allowed = allowance(caller);
  lock_images(caller);
  uint64_t others = images_bytes_except(caller, key);
  if (bytes > allowed || others > allowed - bytes) {
    quit(kRefused, "a disk of " + std::to_string(bytes >> 20) + " MiB would take " + caller.name + "'s disks to " +
                       std::to_string((others + bytes) >> 20) + " MiB, over the " + std::to_string(allowed >> 20) +
                       " MiB that " + kAllowanceFile + " allows: delete a sandbox, or ask for more");
  }
  int dir = open_users_dir(caller, path);
  std::string image = image_path(caller.uid, key);
  std::string backing = mounted_backing(dir);
  if (!backing.empty() && backing.substr(0, backing.find('\n')) == image) {
    // Mounted there already. Asked for more: unmounted (only when nothing uses it), grown, mounted again.
    struct stat st {};
    if (::stat(image.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) >= bytes) return 0;
    // Lazily, by descriptor (a descriptor open on a mount would keep a plain unmount from working): the
    // loop device lets go once nothing uses the disk, which prepare_image waits for.
    std::string at = "/proc/self/fd/" + std::to_string(dir);
    if (::syscall(SYS_umount2, at.c_str(), kMntDetach) != 0) quit_errno("unmounting " + path + " to grow it");
    ::close(dir);
    dir = open_users_dir(caller, path);  // the directory below the mount, now uncovered
  } else if (!backing.empty()) {
    quit(kRefused, path + " is a mount point already");
  }
  prepare_image(caller, key, bytes, fresh);
  int image_file = ::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (image_file < 0) quit_errno("opening " + image);
  int loop = loop_device_for(image_file, image);
  mount_on(loop, dir, image);
  return 0;
}

int detach(const Caller& caller, const std::string& path) {
  int dir = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) quit_errno("opening " + path);
  std::string backing = mounted_backing(dir);
  if (backing.empty()) return 0;  // nothing mounted there
  if (!is_users_image(backing, caller.uid))
    quit(kRefused, path + " is not the top of one of " + caller.name + "'s disks");
  // By descriptor: the magic link leads to the very mount checked above.
  std::string at = "/proc/self/fd/" + std::to_string(dir);
  if (::syscall(SYS_umount2, at.c_str(), kMntDetach) != 0) quit_errno("unmounting " + path);
  return 0;
}

int remove(const Caller& caller, const std::string& key) {
  std::string image = image_path(caller.uid, key);
  if (::access(image.c_str(), F_OK) != 0) return 0;
  lock_images(caller);
  refuse_if_in_use(image, key);
  if (::unlink(image.c_str()) != 0 && errno != ENOENT) quit_errno("removing " + image);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Caller caller = become_root();
  std::vector<std::string> args(argv + (argc > 0 ? 1 : argc), argv + argc);
  const char* usage = "usage: tnk-disk attach KEY DIR BYTES [--fresh] | detach DIR | remove KEY";
  if (args.empty()) quit(kUsage, usage);
  if (args[0] == "attach" && (args.size() == 4 || (args.size() == 5 && args[4] == "--fresh"))) {
    auto bytes = parse_bytes(args[3]);
    if (!valid_key(args[1]) || !bytes) quit(kUsage, usage);
    return attach(caller, args[1], args[2], *bytes, args.size() == 5);
  }
  if (args[0] == "detach" && args.size() == 2) return detach(caller, args[1]);
  if (args[0] == "remove" && args.size() == 2 && valid_key(args[1])) return remove(caller, args[1]);
  quit(kUsage, usage);
}
