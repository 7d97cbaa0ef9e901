/* Searches a whole sandbox for secrets, from inside (run as its root): every regular file below / but
 * /proc, /sys and /dev, then every process's environ and cmdline. The secrets arrive hex-encoded in
 * argv, so that this process's own arguments do not hold them; it prints "<index> <where>" for each hit
 * and, last, "searched <n> files <m> processes". The credential-route test runs it with a planted
 * control string beside the credential: the control must be found where it was planted. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECRETS 8
static char *secrets[MAX_SECRETS];
static size_t lengths[MAX_SECRETS], longest;
static int count;
static long files, processes;

static int hex(int c) { return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10; }

/* Reads `fd` in pieces that overlap by the longest secret, so that a secret across two pieces is found. */
static void search_fd(int fd, const char *where) {
  static char buffer[1 << 20];
  size_t kept = 0;
  int found[MAX_SECRETS] = {0};
  for (;;) {
    ssize_t n = read(fd, buffer + kept, sizeof buffer - kept);
    if (n <= 0) break;
    size_t size = kept + (size_t)n;
    for (int i = 0; i < count; i++) {
      if (!found[i] && memmem(buffer, size, secrets[i], lengths[i])) {
        found[i] = 1;
        printf("%d %s\n", i, where);
      }
    }
    kept = size < longest ? size : longest;
    memmove(buffer, buffer + size - kept, kept);
  }
}

static void walk(int dir_fd, const char *path) {
  DIR *dir = fdopendir(dir_fd);
  if (!dir) {
    close(dir_fd);
    return;
  }
  struct dirent *entry;
  while ((entry = readdir(dir))) {
    const char *name = entry->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") ? path : "", name);
    if (!strcmp(child, "/proc") || !strcmp(child, "/sys") || !strcmp(child, "/dev")) continue;
    struct stat st;
    if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    int fd = openat(dirfd(dir), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
    if (fd < 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(fd, child);
    } else {
      if (S_ISREG(st.st_mode)) {
        files++;
        search_fd(fd, child);
      }
      close(fd);
    }
  }
  closedir(dir);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc && count < MAX_SECRETS; i++, count++) {
    size_t n = strlen(argv[i]) / 2;
    secrets[count] = malloc(n);
    for (size_t j = 0; j < n; j++) secrets[count][j] = (char)(hex(argv[i][2 * j]) * 16 + hex(argv[i][2 * j + 1]));
    lengths[count] = n;
    if (n > longest) longest = n;
  }
  walk(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "/");
  DIR *proc = opendir("/proc");
  struct dirent *entry;
  while (proc && (entry = readdir(proc))) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    processes++;
    for (int k = 0; k < 2; k++) {
      char path[300];
      snprintf(path, sizeof path, "/proc/%s/%s", entry->d_name, k ? "cmdline" : "environ");
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      search_fd(fd, path);
      close(fd);
    }
  }
  printf("searched %ld files %ld processes\n", files, processes);
  return 0;
}
