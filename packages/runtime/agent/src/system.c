/*
 * What the agent does as the machine's init: its own hardening at boot,
 * the bounded /proc (ADR 0011), capabilities it keeps for itself and never
 * passes on, the process list and signals, and a fresh identity.
 *
 * Capabilities: the OCI spec gives the agent CAP_SYS_ADMIN (mounts,
 * sethostname), CAP_DAC_OVERRIDE (the only way into the host socket's
 * directory, which is owned by another uid with mode 0700) and CAP_SETPCAP
 * (to shrink its children's bounding set) on top of what the session's
 * processes get. They stay permitted but out of the effective set, raised
 * around the one call that needs each, so file operations run with exactly
 * the power of the sandbox's own root. Children lose all three before exec.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/random.h>

#include "agent.h"

/* procfs dentries kept of exited tasks (see proc-dentry-cache.ts on the host side) */
#define PROC_DENTRY_CACHE_LIMIT "64"
#define PROCESS_LIST_MAX 10000

static const int AGENT_ONLY[] = {CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_SETPCAP};

struct capability_sets {
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
};

static int capabilities_get(struct capability_sets *sets) {
  memset(sets, 0, sizeof *sets);
  sets->header.version = _LINUX_CAPABILITY_VERSION_3;
  return (int)syscall(SYS_capget, &sets->header, sets->data);
}

static int capabilities_set(struct capability_sets *sets) {
  sets->header.version = _LINUX_CAPABILITY_VERSION_3;
  sets->header.pid = 0;
  return (int)syscall(SYS_capset, &sets->header, sets->data);
}

/* The data array interleaves effective/permitted/inheritable per 32 caps; index them explicitly. */
static __u32 *effective_of(struct capability_sets *sets, int capability) {
  return &sets->data[capability / 32].effective;
}

static __u32 *permitted_of(struct capability_sets *sets, int capability) {
  return &sets->data[capability / 32].permitted;
}

static __u32 *inheritable_of(struct capability_sets *sets, int capability) {
  return &sets->data[capability / 32].inheritable;
}

int capability_raise(int capability) {
  struct capability_sets sets;
  if (capabilities_get(&sets) != 0) return errno;
  __u32 bit = 1u << (capability % 32);
  if (!(*permitted_of(&sets, capability) & bit)) return EPERM;
  *effective_of(&sets, capability) |= bit;
  return capabilities_set(&sets) == 0 ? 0 : errno;
}

void capability_lower(int capability) {
  struct capability_sets sets;
  if (capabilities_get(&sets) != 0) return;
  *effective_of(&sets, capability) &= ~(1u << (capability % 32));
  capabilities_set(&sets);
}

void capabilities_drop_for_child(void) {
  capability_raise(CAP_SETPCAP);
  for (size_t i = 0; i < sizeof AGENT_ONLY / sizeof AGENT_ONLY[0]; i++) {
    if (AGENT_ONLY[i] != CAP_SETPCAP) prctl(PR_CAPBSET_DROP, AGENT_ONLY[i], 0, 0, 0);
  }
  prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct capability_sets sets;
  if (capabilities_get(&sets) != 0) _exit(125);
  for (int word = 0; word < 2; word++) sets.data[word].effective = sets.data[word].inheritable = sets.data[word].permitted;
  for (size_t i = 0; i < sizeof AGENT_ONLY / sizeof AGENT_ONLY[0]; i++) {
    __u32 bit = 1u << (AGENT_ONLY[i] % 32);
    *effective_of(&sets, AGENT_ONLY[i]) &= ~bit;
    *permitted_of(&sets, AGENT_ONLY[i]) &= ~bit;
    *inheritable_of(&sets, AGENT_ONLY[i]) &= ~bit;
  }
  /* A child that kept any of them would be more than the sandbox's root: better not to run at all. */
  if (capabilities_set(&sets) != 0) _exit(125);
}

static void keep_agent_only_out_of_effective(void) {
  struct capability_sets sets;
  if (capabilities_get(&sets) != 0) return;
  for (size_t i = 0; i < sizeof AGENT_ONLY / sizeof AGENT_ONLY[0]; i++) *effective_of(&sets, AGENT_ONLY[i]) &= ~(1u << (AGENT_ONLY[i] % 32));
  capabilities_set(&sets);
}

/* Mounts the procfs with a bounded dentry cache over /proc, unless the top /proc already is one. */
static void bound_proc(void) {
  FILE *mounts = fopen("/proc/mounts", "re");
  bool bounded = false;
  if (mounts) {
    char line[1024];
    while (fgets(line, sizeof line, mounts)) {
      char device[256], point[256], type[64], options[512];
      if (sscanf(line, "%255s %255s %63s %511s", device, point, type, options) != 4) continue;
      if (!strcmp(point, "/proc") && !strcmp(type, "proc")) bounded = strstr(options, "dentry_cache_limit=" PROC_DENTRY_CACHE_LIMIT) != NULL;
    }
    fclose(mounts);
  }
  if (bounded) return;
  if (capability_raise(CAP_SYS_ADMIN) != 0) {
    log_line("airlock-agent: no CAP_SYS_ADMIN to bound /proc");
    return;
  }
  if (mount("proc", "/proc", "proc", 0, "dentry_cache_limit=" PROC_DENTRY_CACHE_LIMIT) != 0) log_line("airlock-agent: mounting the bounded /proc failed: %s", strerror(errno));
  capability_lower(CAP_SYS_ADMIN);
}

void system_boot(void) {
  agent.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  struct stat info;
  /* held from boot: a process that later replaces /dev/null cannot touch the agent's copy */
  if (agent.devnull >= 0 && (fstat(agent.devnull, &info) != 0 || !S_ISCHR(info.st_mode))) {
    close(agent.devnull);
    agent.devnull = -1;
  }
  umask(022);
  if (agent.host_mode) return;
  /* Non-dumpable: no ptrace, /proc/1/mem or process_vm_readv from the sandbox's processes (measured). */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  keep_agent_only_out_of_effective();
  bound_proc();
  if (pins_apply() != 0) {
    /* a rule whose parent can be renamed can be carried away: the machine must not run */
    _exit(1);
  }
  /* After the agent's last mount: from here on nothing in the machine can change its mounts (the contract's rules). */
  if (seccomp_lock_mounts() != 0) {
    log_line("airlock-agent: installing the seccomp filter failed: %s", strerror(errno));
    /* a machine whose mounts could be lifted must not run */
    _exit(1);
  }
}

/* ---- processes ---- */

static bool read_small(const char *path, char *text, size_t size, size_t *length) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t got = read(fd, text, size - 1);
  close(fd);
  if (got < 0) return false;
  text[got] = 0;
  *length = (size_t)got;
  return true;
}

void system_processes(uint32_t id) {
  DIR *proc = opendir("/proc");
  if (!proc) {
    send_error(id, errno, "cannot read /proc", NULL);
    return;
  }
  int64_t count = 0;
  struct dirent *entry;
  while ((entry = readdir(proc)) != NULL && count < PROCESS_LIST_MAX) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    char path[300];
    char stat[1024];
    size_t length;
    snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
    if (!read_small(path, stat, sizeof stat, &length)) continue;
    char *open_paren = strchr(stat, '(');
    char *close_paren = strrchr(stat, ')');
    if (!open_paren || !close_paren || close_paren < open_paren) continue;
    char state = 0;
    long parent = 0;
    long group = 0;
    if (sscanf(close_paren + 1, " %c %ld %ld", &state, &parent, &group) != 3) continue;
    *close_paren = 0;
    size_t frame = frame_begin(&agent.outgoing, MSG_PROCESS, 0, id);
    field_int(&agent.outgoing, TAG_PID, atol(entry->d_name));
    field_int(&agent.outgoing, TAG_PARENT_PID, parent);
    field_int(&agent.outgoing, TAG_GROUP, group);
    field_bytes(&agent.outgoing, TAG_STATE, &state, 1);
    field_string(&agent.outgoing, TAG_NAME, open_paren + 1);
    char command[4096];
    snprintf(path, sizeof path, "/proc/%s/cmdline", entry->d_name);
    if (read_small(path, command, sizeof command, &length)) {
      for (size_t start = 0; start < length;) {
        size_t end = start;
        while (end < length && command[end]) end++;
        field_bytes(&agent.outgoing, TAG_ARG, command + start, end - start);
        start = end + 1;
      }
    }
    frame_finish(&agent.outgoing, frame);
    count++;
  }
  closedir(proc);
  size_t frame;
  send_ok_begin(id, &frame);
  field_int(&agent.outgoing, TAG_COUNT, count);
  frame_finish(&agent.outgoing, frame);
}

static bool started_by_agent(pid_t pid) {
  char path[64];
  char stat[1024];
  size_t length;
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (!read_small(path, stat, sizeof stat, &length)) return false;
  char *close_paren = strrchr(stat, ')');
  char state;
  long parent;
  return close_paren && sscanf(close_paren + 1, " %c %ld", &state, &parent) == 2 && parent == getpid();
}

void system_kill(uint32_t id, struct request *request) {
  pid_t pid = (pid_t)request->pid;
  if (request->pid <= 1 || request->pid > 0x3fffffff || pid == getpid()) {
    send_error(id, EPERM, "refusing to signal pid 1 (the agent) or a process group; name one process", NULL);
    return;
  }
  if (request->signal < 0 || request->signal >= NSIG) {
    send_error(id, EINVAL, "no such signal", NULL);
    return;
  }
  /* On a host (tests) only the agent's own children are fair game. */
  if (agent.host_mode && !started_by_agent(pid)) {
    send_error(id, ESRCH, "no such process among the agent's children", NULL);
    return;
  }
  if (kill(pid, (int)request->signal) != 0) {
    send_error(id, errno, strerror(errno), NULL);
    return;
  }
  size_t frame;
  send_ok_begin(id, &frame);
  frame_finish(&agent.outgoing, frame);
}

/* ---- identity ---- */

static bool valid_hostname(const char *name) {
  size_t length = strlen(name);
  if (length < 1 || length > 63 || name[0] == '-' || name[length - 1] == '-') return false;
  for (size_t i = 0; i < length; i++) {
    if (!isalnum((unsigned char)name[i]) && name[i] != '-') return false;
  }
  return true;
}

static bool valid_machine_id(const char *id) {
  if (strlen(id) != 32) return false;
  for (int i = 0; i < 32; i++) {
    if (!isdigit((unsigned char)id[i]) && !(id[i] >= 'a' && id[i] <= 'f')) return false;
  }
  return true;
}

static int write_small(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) return errno;
  size_t length = strlen(text);
  int error = write(fd, text, length) == (ssize_t)length ? 0 : EIO;
  close(fd);
  return error;
}

void system_identity(uint32_t id, struct request *request) {
  if (agent.host_mode) {
    send_error(id, ENOTSUP, "identity changes apply to sandboxes only, not to an agent running on a host", NULL);
    return;
  }
  if (!request->hostname || !valid_hostname(request->hostname)) {
    send_error(id, EINVAL, "hostname: 1-63 letters, digits and '-' (not at either end)", "hostname");
    return;
  }
  if (!request->machine_id || !valid_machine_id(request->machine_id)) {
    send_error(id, EINVAL, "machine id: 32 lowercase hex digits", "machine-id");
    return;
  }
  int raised = capability_raise(CAP_SYS_ADMIN);
  int result = sethostname(request->hostname, strlen(request->hostname));
  int error = result == 0 ? 0 : errno;
  if (raised == 0) capability_lower(CAP_SYS_ADMIN);
  if (error) {
    send_error(id, error, "setting the hostname failed", "hostname");
    return;
  }
  char line[80];
  snprintf(line, sizeof line, "%s\n", request->hostname);
  write_small("/etc/hostname", line); /* best effort: a read-only /etc is the image's choice */
  snprintf(line, sizeof line, "%s\n", request->machine_id);
  /* The file is 0444 once written (as systemd makes it), and the agent holds CAP_DAC_OVERRIDE only raised:
   * without it, a second identity (a claimed warm machine forked, a fork of a fork) was refused. */
  raised = capability_raise(CAP_DAC_OVERRIDE);
  error = write_small("/etc/machine-id", line);
  if (raised == 0) capability_lower(CAP_DAC_OVERRIDE);
  if (error) {
    send_error(id, error, "writing /etc/machine-id failed", "machine-id");
    return;
  }
  if (request->entropy_length > 0) {
    int random = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
    if (random < 0 || write(random, request->entropy, request->entropy_length) != (ssize_t)request->entropy_length) {
      error = errno ? errno : EIO;
      if (random >= 0) close(random);
      send_error(id, error, "writing entropy to /dev/urandom failed", "entropy");
      return;
    }
    close(random);
  }
  size_t frame;
  send_ok_begin(id, &frame);
  frame_finish(&agent.outgoing, frame);
}
