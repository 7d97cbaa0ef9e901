/* Syscall probes for the isolation tests: each prints the errno name of one forbidden operation
 * ("OK" when it succeeded). The tests run the same probe on the host and in the sandbox: the
 * host's answer shows the call reaches the kernel there, the sandbox's that it is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
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

/* Connects a SOCK_SEQPACKET socket (a supervisor's ctl.sock) to PATH, or to an abstract name (@name),
 * and, connected, sends a policy change as tnk would (with `pending`, the request for the refusals waiting
 * for approval, whose IDs `tnk sandbox approve` takes): "OK" only when the supervisor answered. */
static int connect_unix(const char *where, const char *what) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t len = strlen(where);
  if (len >= sizeof addr.sun_path) return report(-1);
  memcpy(addr.sun_path, where, len);
  if (where[0] == '@') addr.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return report(-1);
  if (connect(fd, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) != 0) {
    return report(-1);
  }
  const char *change = "{\"op\":\"policy\",\"v\":1,\"rules\":[{\"action\":\"allow\",\"entry\":\"*.example\"}],"
                       "\"change\":{\"action\":\"allow\",\"rule\":\"*.example\",\"who\":\"probe\"}}";
  const char *pending = "{\"op\":\"policy\",\"v\":1,\"pending\":true}";
  const char *message = what != NULL && !strcmp(what, "pending") ? pending : change;
  char answer[4096];
  if (send(fd, message, strlen(message), MSG_NOSIGNAL) < 0) return report(-1);
  return report(recv(fd, answer, sizeof answer, 0) > 0 ? 0 : -1);
}

int main(int argc, char **argv) {
  if ((argc == 3 || argc == 4) && !strcmp(argv[1], "unix")) return connect_unix(argv[2], argc == 4 ? argv[3] : NULL);
  if (argc != 2) {
    fprintf(stderr, "usage: probe tiocsti|finit_module|keyctl|bpf|unshare_user|mount|perf_event_open|modify_ldt|vsock|inet\n"
                    "       probe unix PATH|@ABSTRACT [pending]\n");
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
