/*
 * Pins: every parent directory of a filesystem rule's mount outside
 * /workspace is bound onto itself at boot, before the seccomp filter locks
 * the mount table, so that no process can rename or remove it (the kernel,
 * gVisor's too, answers EBUSY for a mount point). Without them a rule's
 * mount moves with its parent: `mv /usr/local /usr/local.moved && mkdir -p
 * /usr/local/bin` leaves a writable /usr/local/bin where the rule was.
 * Under /workspace the OCI spec pins the parents itself (filesystem-mounts.ts);
 * outside it a bind from the host would bypass the root's overlay, so the
 * pins are made here, on the sandbox's own filesystems.
 *
 * The host lists them in PINS_PATH (the agent's socket directory, which only
 * the agent can enter), NUL-separated, outermost first. Each is a recursive
 * bind: a plain one would hide the rule mounts already made under it (runsc
 * makes the spec's mounts before the agent runs). A checkpoint carries the
 * sandbox's mounts, so a restored machine keeps its pins without a boot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/capability.h>

#include "agent.h"

#define PINS_PATH "/.airlock/host/pins"
#define PINS_MAX_BYTES (256 * 1024)

/* Reads the whole pins file; NULL when there is none (no rules outside /workspace). */
static char *read_pins(size_t *length) {
  int raised = capability_raise(CAP_DAC_OVERRIDE);
  int fd = open(PINS_PATH, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int saved = errno;
  if (raised == 0) capability_lower(CAP_DAC_OVERRIDE);
  if (fd < 0) {
    if (saved != ENOENT) log_line("airlock-agent: cannot read %s: %s", PINS_PATH, strerror(saved));
    return NULL;
  }
  char *text = malloc(PINS_MAX_BYTES + 1);
  size_t used = 0;
  while (text && used < PINS_MAX_BYTES) {
    ssize_t count = read(fd, text + used, PINS_MAX_BYTES - used);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    used += (size_t)count;
  }
  close(fd);
  if (text) text[used] = '\0';
  *length = used;
  return text;
}

/* 0 when every listed directory is a mount of its own now, else -1 (logged). */
int pins_apply(void) {
  size_t length = 0;
  char *text = read_pins(&length);
  if (!text) return 0;
  int failed = 0;
  if (capability_raise(CAP_SYS_ADMIN) != 0) {
    log_line("airlock-agent: no CAP_SYS_ADMIN to pin the rules' parent directories");
    free(text);
    return -1;
  }
  for (size_t start = 0; start < length;) {
    const char *path = text + start;
    size_t size = strlen(path);
    start += size + 1;
    if (size == 0 || path[0] != '/') continue;
    struct stat info;
    /* A parent the image has as a symbolic link (or not at all) carries no rule mount: nothing to pin. */
    if (lstat(path, &info) != 0 || !S_ISDIR(info.st_mode)) continue;
    if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) != 0) {
      log_line("airlock-agent: pinning %s failed: %s", path, strerror(errno));
      failed = -1;
    }
  }
  capability_lower(CAP_SYS_ADMIN);
  free(text);
  return failed;
}
