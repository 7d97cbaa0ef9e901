/* Syscall probes for the isolation tests: each prints the errno name of one forbidden operation
 * ("OK" when it succeeded). The tests run the same probe on the host and in the sandbox: the
 * host's answer shows the call reaches the kernel there, the sandbox's that it is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

static int report(long rc) {
  if (rc >= 0) {
    puts("OK");
  } else {
    const char *name = strerrorname_np(errno);
    puts(name ? name : "UNKNOWN");
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: probe tiocsti|finit_module|keyctl|bpf|unshare_user|mount|perf_event_open|modify_ldt|vsock|inet\n");
    return 2;
  }
  const char *what = argv[1];
  char c = 'x';
  if (!strcmp(what, "tiocsti")) return report(ioctl(0, TIOCSTI, &c));
  /* An invalid fd: on the host the kernel answers EBADF (or EPERM without CAP_SYS_MODULE). */
  if (!strcmp(what, "finit_module")) return report(syscall(SYS_finit_module, -1, "", 0));
  if (!strcmp(what, "keyctl")) return report(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
  if (!strcmp(what, "bpf")) return report(syscall(SYS_bpf, -1, NULL, 0));
  if (!strcmp(what, "unshare_user")) return report(unshare(CLONE_NEWUSER));
  if (!strcmp(what, "mount")) return report(mount("none", "/tmp", "tmpfs", 0, NULL));
  if (!strcmp(what, "modify_ldt")) return report(syscall(SYS_modify_ldt, 0, &c, 0));  /* reads the LDT */
  if (!strcmp(what, "vsock")) return report(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!strcmp(what, "inet")) return report(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!strcmp(what, "perf_event_open")) return report(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  fprintf(stderr, "probe: unknown probe %s\n", what);
  return 2;
}
