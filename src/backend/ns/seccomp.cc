#include "backend/ns/seccomp.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/unique_fd.h"

namespace tnk::ns {

namespace {

// Namespace creation inside the sandbox would give a nested user namespace with full capabilities over
// new mount/net namespaces: kernel attack surface the sandbox does not need. CLONE_NEWTIME is left out:
// in clone(2) that bit is part of the exit signal; unshare(2) is refused as a whole.
constexpr uint64_t kCloneNewFlags[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                       CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

// The socket families a sandbox uses: local, IPv4/IPv6 (in its own network namespace), and netlink
// (route, sock_diag: ip, ss). Every other family is refused: AF_VSOCK is not tied to a network namespace
// and reaches the hypervisor's or the host's vsock services (security review M1); AF_PACKET, AF_ALG,
// TIPC, RDS and the rest are kernel surface an agent has no use for. Docker refuses AF_VSOCK too.
constexpr int kSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

// personality(2) values programs use: PER_LINUX, PER_LINUX32, ADDR_NO_RANDOMIZE (with either), and the
// 0xffffffff query. Others (READ_IMPLIES_EXEC, ...) weaken the address space protections.
constexpr uint32_t kPersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

constexpr sock_filter stmt(unsigned code, uint32_t k) { return sock_filter{static_cast<uint16_t>(code), 0, 0, k}; }
constexpr sock_filter jump(unsigned code, uint32_t k, uint8_t jt, uint8_t jf) {
  return sock_filter{static_cast<uint16_t>(code), jt, jf, k};
}

// The newest system call this filter was written against: set_mempolicy_home_node, Linux 6.1 (Debian 12).
// Since Linux 5.1 every architecture numbers new calls alike, so one value serves x86_64 and arm64.
// Anything newer answers ENOSYS, as an older kernel would, until someone has looked at it: the filter
// denies by name what it knows, and so must not let through what it has never seen (security review
// L4: open_tree_attr, listmount, statmount, ... came after).
constexpr uint32_t kNewestReviewedSyscall = 450;

// Before libseccomp's program: calls newer than kNewestReviewedSyscall get ENOSYS; personality(2) gets
// the values above, EPERM otherwise. Any other call (or a foreign architecture) falls through to
// libseccomp's program, which follows.
std::vector<sock_filter> prefix() {
  constexpr auto kValues = static_cast<uint8_t>(std::size(kPersonalities));
  constexpr uint8_t kLength = 7 + kValues + 2;  // index of libseccomp's first instruction
  constexpr uint32_t kArgLow = offsetof(seccomp_data, args) + (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4);
  std::vector<sock_filter> prog;
  prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, kLength - 2));
  prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  prog.push_back(jump(BPF_JMP | BPF_JGT | BPF_K, kNewestReviewedSyscall, 0, 1));
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
  prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 0, kLength - 6));
  prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArgLow));
  for (uint8_t i = 0; i < kValues; ++i) {
    // Jump to the ALLOW at kLength - 1 from instruction 7 + i.
    prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kPersonalities[i], static_cast<uint8_t>(kLength - 9 - i), 0));
  }
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return prog;
}

class Context {
 public:
  Context() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {}
  ~Context() {
    if (ctx_ != nullptr) seccomp_release(ctx_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

Error rule_error(int rc, const std::string& what) {
  return sys_error(-rc, "building the seccomp filter (" + what + ")");
}

Status add_rules(scmp_filter_ctx ctx) {
  for (const char* name : seccomp_denied_syscalls()) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a syscall of this architecture (e.g. iopl on arm64)
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc < 0) return rule_error(rc, name);
  }
  // ioctl's request is an unsigned int: compare only the low 32 bits (CVE-2017-5226 style TIOCSTI bypass).
  // TIOCSETD: a line discipline is a kernel module loaded on demand (n_hdlc, n_gsm: past CVEs).
  for (uint64_t request : {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}, uint64_t{TIOCSETD}}) {
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xffffffffULL, request));
    if (rc < 0) return rule_error(rc, "ioctl");
  }
  // socket's family is an int: compare the low 32 bits. EAFNOSUPPORT, as a kernel without the family
  // answers, so that programs fall back as they would there. (The trailing 0 is the second datum, which
  // EQ and GE ignore, written out so that clang sees a complete initializer.)
  for (int family = 0; family < AF_MAX; ++family) {
    if (std::find(std::begin(kSocketFamilies), std::end(kSocketFamilies), family) != std::end(kSocketFamilies))
      continue;
    int rc =
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_EQ, family, 0));
    if (rc < 0) return rule_error(rc, "socket");
  }
  int above =
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_GE, AF_MAX, 0));
  if (above < 0) return rule_error(above, "socket");
  // clone's flags are its first argument on x86_64 and arm64 (s390 swaps the first two).
  for (uint64_t flag : kCloneNewFlags) {
    int rc =
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc < 0) return rule_error(rc, "clone");
  }
  // clone3 passes its flags in memory, which seccomp cannot read: ENOSYS makes libc fall back to clone.
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc < 0) return rule_error(rc, "clone3");
  return ok_status();
}

Result<std::vector<sock_filter>> export_program(scmp_filter_ctx ctx) {
  UniqueFd memfd(memfd_create("tnk-seccomp", MFD_CLOEXEC));
  if (!memfd.valid()) return sys_error(errno, "creating a memfd for the seccomp filter");
  int rc = seccomp_export_bpf(ctx, memfd.get());
  if (rc < 0) return rule_error(rc, "export");
  off_t size = lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    return failed("building the seccomp filter: libseccomp exported " + std::to_string(size) + " bytes");
  }
  std::vector<sock_filter> prog(static_cast<size_t>(size) / sizeof(sock_filter));
  if (pread(memfd.get(), prog.data(), static_cast<size_t>(size), 0) != size) {
    return sys_error(errno, "reading the exported seccomp filter");
  }
  return prog;
}

}  // namespace

// ptrace(2) stays allowed: debuggers and strace are everyday agent tools; the kernel only lets a process
// trace its own uid's processes (no CAP_SYS_PTRACE is ever granted), and the pid namespace hides
// everything outside the sandbox. PID 1 and joining helpers are non-dumpable, so they cannot be traced.
const std::vector<const char*>& seccomp_denied_syscalls() {
  static const std::vector<const char*> kDenied = {
      "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open", "kexec_load", "kexec_file_load",
      "init_module", "finit_module", "delete_module", "mount", "umount", "umount2", "pivot_root", "move_mount",
      "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr", "unshare", "setns", "swapon", "swapoff",
      "reboot", "syslog", "acct", "quotactl", "quotactl_fd", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm",
      "lookup_dcookie", "uselib", "nfsservctl", "vhangup",
      // x86's per-process segment table: 16-bit code only, a recurring source of kernel bugs.
      "modify_ldt",
      // io_uring runs operations outside this filter's view; Docker refuses it too.
      "io_uring_setup", "io_uring_enter", "io_uring_register"};
  return kDenied;
}

Result<std::vector<sock_filter>> build_seccomp_filter() {
  Context ctx;
  if (ctx.get() == nullptr) return failed("building the seccomp filter: seccomp_init failed");
  TNK_RETURN_IF_ERROR(add_rules(ctx.get()));
  TNK_ASSIGN_OR_RETURN(std::vector<sock_filter> body, export_program(ctx.get()));
  std::vector<sock_filter> prog = prefix();
  prog.insert(prog.end(), body.begin(), body.end());
  if (prog.size() > BPF_MAXINSNS) return failed("building the seccomp filter: the program is too long");
  return prog;
}

}  // namespace tnk::ns
