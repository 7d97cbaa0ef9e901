#include "confine/setid_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace tnk::confine {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
constexpr uint32_t kX32Bit = 0x40000000;  // __X32_SYSCALL_BIT: x32 calls share the x86_64 arch value
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "setid_filter: add this architecture's audit value"
#endif

constexpr uint32_t kFchmodat2 = 452;  // the same number on every architecture; kernel 6.6+, newer than our headers

// A call whose mode argument is checked, and the argument's index.
struct ModeCall {
  uint32_t nr;
  uint8_t mode_arg;
};

constexpr ModeCall kModeCalls[] = {
#ifdef SYS_chmod
    {SYS_chmod, 1},
#endif
#ifdef SYS_creat
    {SYS_creat, 1},
#endif
#ifdef SYS_open
    {SYS_open, 2},
#endif
#ifdef SYS_mknod
    {SYS_mknod, 1},
#endif
    {SYS_fchmod, 1}, {SYS_fchmodat, 2}, {kFchmodat2, 2}, {SYS_openat, 3}, {SYS_mknodat, 2},
};

constexpr sock_filter stmt(unsigned code, uint32_t k) { return sock_filter{static_cast<uint16_t>(code), 0, 0, k}; }
constexpr sock_filter jump(unsigned code, uint32_t k, uint8_t jt, uint8_t jf) {
  return sock_filter{static_cast<uint16_t>(code), jt, jf, k};
}
constexpr sock_filter ret_errno(int err) {
  return stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (static_cast<uint32_t>(err) & SECCOMP_RET_DATA));
}
constexpr sock_filter ret_allow() { return stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW); }

// mode_t is 32 bits: the low word of the 64-bit argument slot.
constexpr uint32_t arg_low_word(uint8_t index) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + index * sizeof(uint64_t)) +
         (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4);
}

}  // namespace

std::vector<sock_filter> setid_mode_filter() {
  std::vector<sock_filter> prog;
  prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  prog.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kX32Bit, 0, 1));
  prog.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
  // One block per call: not this call, skip the block; else EPERM when the mode has a set-id bit.
  for (const ModeCall& call : kModeCalls) {
    prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, call.nr, 0, 4));
    prog.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg_low_word(call.mode_arg)));
    prog.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, S_ISUID | S_ISGID, 0, 1));
    prog.push_back(ret_errno(EPERM));
    prog.push_back(ret_allow());
  }
  for (uint32_t nr : {uint32_t{SYS_io_uring_setup}, uint32_t{SYS_io_uring_enter}, uint32_t{SYS_io_uring_register}}) {
    prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    prog.push_back(ret_errno(EPERM));
  }
  prog.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1));
  prog.push_back(ret_errno(ENOSYS));
  prog.push_back(ret_allow());
  return prog;
}

int load_seccomp_program(const std::vector<sock_filter>& program) {
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = const_cast<sock_filter*>(program.data());
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog));
}

}  // namespace tnk::confine
