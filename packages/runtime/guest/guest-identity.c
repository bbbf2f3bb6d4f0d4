/*
 * What the guest agent does for the machine as a whole: freeze and thaw
 * every command process (the workload cgroup) around a snapshot, and give a
 * restored machine its own identity: credited entropy and a forced CRNG
 * reseed, hostname, machine id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm-guest-agent.h"

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t written = write(fd, text, strlen(text));
  int saved = errno;
  close(fd);
  errno = saved;
  return written == (ssize_t)strlen(text) ? 0 : -1;
}

static int wait_frozen(int frozen) {
  char want[16];
  snprintf(want, sizeof want, "frozen %d", frozen);
  for (int attempt = 0; attempt < 500; attempt++) {
    char text[256] = {0};
    int fd = open(WORKLOAD_CGROUP "/cgroup.events", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got > 0 && strstr(text, want)) return 0;
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  errno = ETIMEDOUT;
  return -1;
}

void set_frozen(uint32_t id, int frozen) {
  if (write_text(WORKLOAD_CGROUP "/cgroup.freeze", frozen ? "1" : "0") < 0 || wait_frozen(frozen) < 0) {
    send_error(id, "cannot %s the workload: %s", frozen ? "freeze" : "thaw");
    return;
  }
  send_frame(G_OK, id, NULL, 0);
}

/* IDENTITY payload: u32 hostname length, hostname, u32 machine id length, machine id, entropy (the rest).
   A length of 0 keeps that item as it is (a resumed machine only gets fresh entropy). */
void apply_identity(uint32_t id, const unsigned char *payload, size_t length) {
  if (length < 8) goto malformed;
  uint32_t host_length = get32(payload);
  if (host_length > 64 || 8 + (size_t)host_length > length) goto malformed;
  uint32_t machine_length = get32(payload + 4 + host_length);
  if ((machine_length != 0 && machine_length != 32) || 8 + (size_t)host_length + machine_length > length) goto malformed;
  const char *hostname = (const char *)payload + 4;
  const char *machine_id = (const char *)payload + 8 + host_length;
  const unsigned char *entropy = payload + 8 + host_length + machine_length;
  size_t entropy_length = length - 8 - host_length - machine_length;
  if (entropy_length < 32 || entropy_length > 512) goto malformed;

  /* Entropy first, credited, then a forced reseed: every later read of the CRNG (by this machine's
     processes or kernel) differs from its clones'. */
  int random_fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
  if (random_fd < 0) {
    send_error(id, "cannot open %s: %s", "/dev/urandom");
    return;
  }
  struct rand_pool_info *pool = malloc(sizeof *pool + entropy_length);
  if (!pool) die("out of memory");
  pool->entropy_count = (int)(entropy_length * 8);
  pool->buf_size = (int)entropy_length;
  memcpy(pool->buf, entropy, entropy_length);
  int added = ioctl(random_fd, RNDADDENTROPY, pool);
  free(pool);
  if (added < 0 || ioctl(random_fd, RNDRESEEDCRNG) < 0) {
    send_error(id, "cannot reseed the kernel RNG (%s): %s", added < 0 ? "RNDADDENTROPY" : "RNDRESEEDCRNG");
    close(random_fd);
    return;
  }
  close(random_fd);

  char line[80];
  if (host_length > 0) {
    if (sethostname(hostname, host_length) < 0) {
      send_error(id, "cannot set the hostname (%s): %s", "sethostname");
      return;
    }
    snprintf(line, sizeof line, "%.*s\n", (int)host_length, hostname);
    int fd = open("/etc/hostname", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) { /* best effort: a read-only /etc is the image's choice */
      ssize_t ignored = write(fd, line, strlen(line));
      (void)ignored;
      close(fd);
    }
  }
  if (machine_length > 0) {
    snprintf(line, sizeof line, "%.32s\n", machine_id);
    int fd = open("/etc/machine-id.airlock-new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0 || write(fd, line, 33) != 33 || fsync(fd) < 0 || rename("/etc/machine-id.airlock-new", "/etc/machine-id") < 0) {
      send_error(id, "cannot write %s: %s", "/etc/machine-id");
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
  }
  send_frame(G_OK, id, NULL, 0);
  return;
malformed:
  errno = EINVAL;
  send_error(id, "malformed identity request (%s): %s", "fields");
}

