// A real boot: tnk's guest kernel, under TCG, with the QEMU command line of qemu_argv() and a base disk
// from ensure_disk() (a tiny tree whose "agent" is /bin/true), a qcow2 overlay, the user network
// and, where virtiofsd is installed, the workspace device served by virtiofsd with virtiofsd_plan()'s
// argv. The guest mounts its root, runs /sbin/tnk-agent as init, which exits; the kernel panics,
// reboots (panic=-1, reboot=t) and QEMU exits by itself (-no-reboot). Looked at from outside: the
// console log, QEMU's exit status, the base disk unchanged.
//
// Needs qemu-system-x86_64 and a built guest kernel: $TNK_TEST_VM_KERNEL (a vmlinux), else the current
// kernel in the cache ($TNK_TEST_CACHE or $XDG_CACHE_HOME, as `tnk image build --vm` builds it). Skips
// loudly otherwise (a failure under TNK_TEST_MUST_WORK=1).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "backend/vm/boot/boot_files.h"
#include "backend/vm/boot/disk.h"
#include "backend/vm/host_kvm.h"
#include "backend/vm/processes.h"
#include "backend/vm/qemu_argv.h"
#include "backend/vm/virtiofsd_argv.h"
#include "core/capped_log.h"
#include "core/env.h"
#include "core/files.h"
#include "core/log_drain.h"
#include "core/subprocess.h"
#include "host/host_probe.h"
#include "image/tree.h"
#include "temp_dir.h"

namespace tnk::vm {
namespace {

namespace fs = std::filesystem;

#define TNK_VM_SKIP(reason)                                                  \
  do {                                                                       \
    const char* must_work = std::getenv("TNK_TEST_MUST_WORK");               \
    if (must_work != nullptr && std::string(must_work) == "1") {             \
      GTEST_FAIL() << "TNK_TEST_MUST_WORK=1 forbids skipping: " << (reason); \
    }                                                                        \
    GTEST_SKIP() << "SKIPPED LOUDLY: " << (reason);                          \
  } while (0)

// The vmlinux to boot, or "" with the reason in `why`.
fs::path find_vmlinux(const Env& env, std::string& why) {
  if (auto given = env.get_nonempty("TNK_TEST_VM_KERNEL")) return *given;
  Paths paths;
  if (auto cache = env.get_nonempty("TNK_TEST_CACHE")) {
    paths.cache_dir = fs::path(*cache) / "tnk";
  } else if (auto resolved = Paths::resolve(env)) {
    paths = *resolved;
  }
  // The fragment of this source tree: the test binary has no share/tnk/ beside it, as tnk has.
  auto recipe = vm::boot::current_kernel_recipe(fs::path(TNK_SOURCE_DIR) / "kernel" / vm::boot::kKernelFragmentName,
                                                paths.memo_dir());
  if (!recipe) {
    why = "cannot tell the guest kernel: " + recipe.error().message;
    return "";
  }
  auto kernel = vm::boot::find_kernel(paths, vm::boot::kernel_id(*recipe));
  if (!kernel) {
    why = "no guest kernel " + vm::boot::kernel_id(*recipe) + " in " + paths.cache_dir.string() +
          " (run `tnk image build --vm`, or set TNK_TEST_VM_KERNEL)";
    return "";
  }
  return kernel->vmlinux;
}

// A root tree with /bin/true and what it needs from glibc, laid out as Debian's merged /usr.
bool make_tiny_tree(const fs::path& tree) {
  for (const char* d : {"usr/bin", "usr/sbin", "usr/lib/x86_64-linux-gnu", "usr/lib64", "dev", "proc", "sys"}) {
    if (!make_dirs(tree / d, 0755).ok()) return false;
  }
  for (auto [link, target] :
       {std::pair{"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"}}) {
    fs::create_symlink(target, tree / link);
  }
  std::error_code ec;
  for (auto [from, to] : {std::pair{"/usr/bin/true", "usr/bin/true"},
                          {"/lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libc.so.6"},
                          {"/lib64/ld-linux-x86-64.so.2", "usr/lib64/ld-linux-x86-64.so.2"}}) {
    if (!fs::copy_file(from, tree / to, ec)) return false;
  }
  return true;
}

bool wait_for_socket(const fs::path& socket, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  struct stat st {};
  while (std::chrono::steady_clock::now() < deadline) {
    if (::stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(VmBootSmoke, TcgBootMountsTheRootRunsInitAndQemuExits) {
  Env env = Env::from_process();
  host::HostFacts facts = host::gather_host_facts(env);
  if (!facts.qemu_found) TNK_VM_SKIP("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)");
  std::string why;
  fs::path vmlinux = find_vmlinux(env, why);
  if (vmlinux.empty()) TNK_VM_SKIP(why);
  if (!fs::exists("/lib64/ld-linux-x86-64.so.2")) TNK_VM_SKIP("not an x86_64 Debian host");

  testing_support::TempDir dir("tnk-vm-smoke");
  const fs::path tree = dir.path() / "rootfs";
  ASSERT_TRUE(make_tiny_tree(tree));
  auto size = image::measure_tree(tree);
  ASSERT_TRUE(size.ok());
  image::ImageInfo image;
  image.id = "debian-bookworm-000000000000";
  image.rootfs = tree;
  image.size_bytes = size->bytes;
  image.inodes = size->inodes;
  Paths paths;
  paths.home = dir.path();
  paths.cache_dir = dir.path() / "cache";
  Log log(std::cerr);
  auto disk = vm::boot::ensure_disk(paths, image, "/usr/bin/true", log);  // "/sbin/tnk-agent" is true(1)
  ASSERT_TRUE(disk.ok()) << disk.error().message;
  struct stat base_before {};
  ASSERT_EQ(::stat(disk->base.c_str(), &base_before), 0);
  const fs::path overlay = dir.path() / "disk.qcow2";
  ASSERT_TRUE(vm::boot::create_overlay(disk->base, dir.path() / "base.img", overlay, 1ull << 30).ok());

  QemuConfig config;
  config.kvm = false;  // TCG on every host: the same path as this machine's
  config.tsc_khz = host_tsc_khz().value_or(0);
  config.memory_mib = 256;
  config.kernel = vmlinux;
  config.root_disk = overlay;
  config.boot_disk = disk->base;  // the kernel's root, read-only, as a sandbox of this tnk boots
  config.qmp_socket = dir.path() / "qmp.sock";
  config.agent_socket = dir.path() / "agent.sock";
  config.serial_socket = dir.path() / "serial.sock";  // the console, drained as the supervisor does
  const fs::path serial_log = dir.path() / "serial.log";
  auto serial_listener = vm::listen_unix(config.serial_socket);
  ASSERT_TRUE(serial_listener.ok()) << serial_listener.error().message;
  auto console_log = CappedLog::open(serial_log, kLogCapBytes, true);
  ASSERT_TRUE(console_log.ok()) << console_log.error().message;
  auto console_drain = LogDrain::accept_one(std::move(*serial_listener), std::move(*console_log));
  ASSERT_TRUE(console_drain.ok()) << console_drain.error().message;
  config.quiet = false;
  config.agent.token = "smoke";
  config.network = true;

  pid_t virtiofsd = -1;
  if (!facts.virtiofsd_path.empty() && ::geteuid() == 0) {
    VirtiofsdConfig vfs;
    vfs.program = facts.virtiofsd_path;
    vfs.socket = dir.path() / "virtiofsd.sock";
    vfs.source = dir.path();
    vfs.owner_uid = vfs.owner_gid = 1000;  // virtiofsd refuses a project host root owns
    auto plan = virtiofsd_plan(vfs);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    // Plain root here (the supervisor adds the user namespace of plan->uid_map): this checks the argv
    // and QEMU's vhost-user handshake with it (modern virtio-mmio), not the ownership mapping.
    auto started = start_process(plan->argv, [] { return 0; });
    ASSERT_TRUE(started.ok()) << started.error().message;
    virtiofsd = *started;
    ASSERT_TRUE(wait_for_socket(vfs.socket, std::chrono::seconds(5))) << "virtiofsd made no socket";
    config.virtiofs_socket = vfs.socket;
  } else {
    std::cerr << "note: virtiofsd not used (not installed, or not root)\n";
  }

  auto argv = qemu_argv(config);
  ASSERT_TRUE(argv.ok()) << argv.error().message;
  ProcessOptions options;
  options.capture_stdout = options.capture_stderr = true;
  options.timeout = std::chrono::seconds(120);
  auto started = std::chrono::steady_clock::now();
  auto qemu = run_process(*argv, options);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (virtiofsd > 0) {
    ::kill(virtiofsd, SIGTERM);  // it exits by itself when QEMU disconnects; this is for a failed boot
    ::waitpid(virtiofsd, nullptr, 0);
  }
  ASSERT_TRUE(qemu.ok()) << qemu.error().message;
  console_drain->reset();  // QEMU has exited: the console is all in serial_log
  auto console = read_file(serial_log);
  ASSERT_TRUE(console.ok());
  EXPECT_EQ(qemu->exit_code, 0) << qemu->err;
  // The base disk, read-only: the init the kernel runs is the one tnk put there (security review 3, R3-H2).
  EXPECT_NE(console->find("VFS: Mounted root (ext4 filesystem) readonly"), std::string::npos) << *console;
  EXPECT_NE(console->find("Run /sbin/tnk-agent as init process"), std::string::npos) << *console;
  EXPECT_NE(console->find("Attempted to kill init! exitcode=0x00000000"), std::string::npos) << *console;
  EXPECT_NE(console->find("tnk.token=smoke"), std::string::npos);  // the agent's parameters arrive
  struct stat base_after {};  // the base is never written (hashing 270 MB would dwarf the boot)
  ASSERT_EQ(::stat(disk->base.c_str(), &base_after), 0);
  EXPECT_EQ(base_after.st_mtim.tv_sec, base_before.st_mtim.tv_sec);
  EXPECT_EQ(base_after.st_mtim.tv_nsec, base_before.st_mtim.tv_nsec);
  EXPECT_EQ(base_after.st_mode & 07777, 0444u);
  std::cout << "boot to init exit under TCG (QEMU start to QEMU exit): " << ms.count() << " ms\n";
}

}  // namespace
}  // namespace tnk::vm
