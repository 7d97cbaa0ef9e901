/* The client side of the proxy load (tests/load/soak.py, docs/reliability.md "Load and soak"): run
 * inside a sandbox, it opens many connections to the sandbox's egress proxy at once, from one thread
 * (poll), and prints one JSON line of what became of each kind:
 *
 *   proxy_clients HOST PORT --allowed N NAME --denied N NAME --slow N --idle N [--gap MS] [--deadline S]
 *
 * allowed  sends `GET http://NAME/` at once (a name the allow-list lists: 200 from the upstream)
 * denied   the same for a name it does not list (403 from the proxy)
 * slow     sends such a head one byte every --gap ms (default 500) and never finishes it within the
 *          proxy's head timeout (expected: 408)
 * idle     connects and sends nothing (expected: 408 at the proxy's head timeout)
 *
 * The slow and idle clients connect first; once each has connected (and a slow one sent its first
 * byte) the fast ones, allowed and denied in turn, all connect at once, so they meet a proxy whose
 * slots the slow ones hold.
 * Every connection is read until the proxy closes it (or --deadline, default 60 s, passes). An outcome
 * is the answer's status code, "closed" (closed without a byte), "reset", "connect_failed" or
 * "deadline". `fast_max_ms` is the longest a fast client waited from its connect to its answer's
 * status line. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum kind { ALLOWED, DENIED, SLOW, IDLE, KINDS };
static const char *const kind_names[KINDS] = {"allowed", "denied", "slow", "idle"};

enum { MAX_OUTCOMES = 16 };
struct tally {
  char name[16];
  int count;
};
static struct tally tallies[KINDS][MAX_OUTCOMES];

struct conn {
  int fd;
  enum kind kind;
  const char *request;
  size_t request_len;
  size_t sent;
  long long next_send_ms;
  long long connect_ms;
  int connected;
  int done;
  char status[4];  /* the first line's code, once read */
  size_t got;      /* bytes of the answer read so far */
  char head[16];   /* its first bytes */
};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count(enum kind kind, const char *outcome) {
  for (int i = 0; i < MAX_OUTCOMES; ++i) {
    if (tallies[kind][i].count == 0 && tallies[kind][i].name[0] == 0) {
      snprintf(tallies[kind][i].name, sizeof tallies[kind][i].name, "%s", outcome);
    }
    if (strcmp(tallies[kind][i].name, outcome) == 0) {
      ++tallies[kind][i].count;
      return;
    }
  }
}

static void finish(struct conn *c, const char *outcome) {
  if (c->done) return;
  c->done = 1;
  count(c->kind, outcome);
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

static int open_conn(struct conn *c, const struct sockaddr_in *addr) {
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return -1;
  c->connect_ms = now_ms();
  if (connect(c->fd, (const struct sockaddr *)addr, sizeof *addr) != 0 && errno != EINPROGRESS) {
    finish(c, "connect_failed");
  }
  return 0;
}

static char *request_for(const char *name, int slow) {
  char *text = NULL;
  /* A slow head is long: at one byte per gap it cannot be complete within the proxy's head timeout. */
  const char *pad = slow ? "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n" : "";
  if (asprintf(&text, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n%s\r\n", name, name, pad) < 0) exit(2);
  return text;
}

/* Advances one connection on its poll events. */
static void step(struct conn *c, short revents, int gap_ms, long long now, long long *fast_max_ms) {
  if (c->done) return;
  if (!c->connected && (revents & (POLLOUT | POLLERR | POLLHUP))) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      finish(c, "connect_failed");
      return;
    }
    c->connected = 1;
    c->next_send_ms = now;
  }
  if (!c->connected) return;
  if (c->sent < c->request_len && now >= c->next_send_ms) {
    size_t n = c->kind == SLOW ? 1 : c->request_len - c->sent;
    ssize_t w = send(c->fd, c->request + c->sent, n, MSG_NOSIGNAL);
    if (w > 0) c->sent += (size_t)w;
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      /* The proxy gave up on the request (408) and closed: read what it answered. */
      c->sent = c->request_len;
    }
    c->next_send_ms = now + gap_ms;
  }
  if (revents & (POLLIN | POLLHUP | POLLERR)) {
    char buf[4096];
    for (;;) {
      ssize_t r = recv(c->fd, buf, sizeof buf, 0);
      if (r > 0) {
        size_t room = sizeof c->head - 1;
        for (ssize_t j = 0; j < r && c->got + (size_t)j < room; ++j) c->head[c->got + (size_t)j] = buf[j];
        c->got += (size_t)r;
        if (c->status[0] == 0 && c->got >= 12) {
          if (strncmp(c->head, "HTTP/1.", 7) == 0) {
            memcpy(c->status, c->head + 9, 3);
          } else {
            memcpy(c->status, "bad", 3); /* not an HTTP answer */
            fprintf(stderr, "proxy_clients: a %s client's answer begins with %.15s\n", kind_names[c->kind], c->head);
          }
          if (c->kind == ALLOWED || c->kind == DENIED) {
            long long waited = now - c->connect_ms;
            if (waited > *fast_max_ms) *fast_max_ms = waited;
          }
        }
        continue;
      }
      if (r == 0) {
        finish(c, c->got == 0 ? "closed" : c->status[0] ? c->status : "short");
      } else if (errno != EAGAIN && errno != EINTR) {
        finish(c, c->status[0] ? c->status : c->got ? "short" : "reset");
      }
      break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: proxy_clients HOST PORT --allowed N NAME --denied N NAME --slow N --idle N "
                    "[--gap MS] [--deadline S]\n");
    return 2;
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
    fprintf(stderr, "proxy_clients: not an IPv4 address: %s\n", argv[1]);
    return 2;
  }
  int counts[KINDS] = {0};
  const char *names[KINDS] = {"unset.invalid", "unset.invalid", NULL, NULL};
  int gap_ms = 500, deadline_s = 60;
  for (int i = 3; i < argc; ++i) {
    if (!strcmp(argv[i], "--allowed") && i + 2 < argc) {
      counts[ALLOWED] = atoi(argv[++i]);
      names[ALLOWED] = argv[++i];
    } else if (!strcmp(argv[i], "--denied") && i + 2 < argc) {
      counts[DENIED] = atoi(argv[++i]);
      names[DENIED] = argv[++i];
    } else if (!strcmp(argv[i], "--slow") && i + 1 < argc) {
      counts[SLOW] = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--idle") && i + 1 < argc) {
      counts[IDLE] = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--gap") && i + 1 < argc) {
      gap_ms = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--deadline") && i + 1 < argc) {
      deadline_s = atoi(argv[++i]);
    } else {
      fprintf(stderr, "proxy_clients: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  names[SLOW] = names[DENIED];
  int total = counts[ALLOWED] + counts[DENIED] + counts[SLOW] + counts[IDLE];
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < (rlim_t)total + 64) {
    lim.rlim_cur = lim.rlim_max < (rlim_t)total + 64 ? lim.rlim_max : (rlim_t)total + 64;
    setrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < (rlim_t)total + 16) {
      fprintf(stderr, "proxy_clients: %d connections need more fds than RLIMIT_NOFILE allows (%llu)\n", total,
              (unsigned long long)lim.rlim_cur);
      return 2;
    }
  }
  struct conn *conns = calloc((size_t)total, sizeof *conns);
  struct pollfd *fds = calloc((size_t)total, sizeof *fds);
  char *requests[KINDS] = {request_for(names[ALLOWED], 0), request_for(names[DENIED], 0),
                           request_for(names[DENIED], 1), ""};
  /* The slow and idle ones first; then the fast ones, allowed and denied in turn, so that both kinds
   * meet the same proxy (and, on vm, the same backlog in QEMU's forwarders). */
  enum kind order[] = {SLOW, IDLE};
  int n = 0;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < counts[order[k]]; ++i) conns[n++].kind = order[k];
  }
  for (int i = 0; i < counts[ALLOWED] || i < counts[DENIED]; ++i) {
    if (i < counts[ALLOWED]) conns[n++].kind = ALLOWED;
    if (i < counts[DENIED]) conns[n++].kind = DENIED;
  }
  for (int i = 0; i < total; ++i) {
    conns[i].request = requests[conns[i].kind];
    conns[i].request_len = strlen(requests[conns[i].kind]);
    conns[i].fd = -1;
  }
  long long start = now_ms(), deadline = start + (long long)deadline_s * 1000, fast_max_ms = 0;
  int slow_total = counts[SLOW] + counts[IDLE];
  for (int i = 0; i < slow_total; ++i) open_conn(&conns[i], &addr);
  int fast_opened = 0;
  for (;;) {
    long long now = now_ms();
    int open = 0, slow_ready = 1;
    for (int i = 0; i < total; ++i) {
      struct conn *c = &conns[i];
      fds[i].fd = c->done ? -1 : c->fd;
      fds[i].events = POLLIN;
      fds[i].revents = 0;
      if (c->fd >= 0 && !c->done) {
        ++open;
        if (!c->connected || (c->sent < c->request_len && now >= c->next_send_ms)) fds[i].events |= POLLOUT;
      }
      if (i < slow_total && !c->done && (!c->connected || (c->kind == SLOW && c->sent == 0))) slow_ready = 0;
    }
    if (!fast_opened && slow_ready) {
      for (int i = slow_total; i < total; ++i) open_conn(&conns[i], &addr);
      fast_opened = 1;
      continue;
    }
    if (open == 0 && fast_opened) break;
    if (now >= deadline) {
      for (int i = 0; i < total; ++i) finish(&conns[i], "deadline");
      break;
    }
    int timeout = gap_ms < 100 ? gap_ms : 100;
    if (poll(fds, (nfds_t)total, timeout) < 0 && errno != EINTR) {
      perror("poll");
      return 1;
    }
    now = now_ms();
    for (int i = 0; i < total; ++i) step(&conns[i], fds[i].fd >= 0 ? fds[i].revents : 0, gap_ms, now, &fast_max_ms);
  }
  printf("{\"elapsed_ms\":%lld,\"fast_max_ms\":%lld,\"outcomes\":{", now_ms() - start, fast_max_ms);
  for (int k = 0; k < KINDS; ++k) {
    printf("%s\"%s\":{", k ? "," : "", kind_names[k]);
    int first = 1;
    for (int i = 0; i < MAX_OUTCOMES && tallies[k][i].name[0]; ++i) {
      printf("%s\"%s\":%d", first ? "" : ",", tallies[k][i].name, tallies[k][i].count);
      first = 0;
    }
    printf("}");
  }
  printf("}}\n");
  return 0;
}
