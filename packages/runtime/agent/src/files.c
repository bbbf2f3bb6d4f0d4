/*
 * File operations, each on a path resolved by paths.c and then acted on
 * relative to the directory fd that resolution returned, with O_NOFOLLOW
 * on the last name: nothing between the check and the use can send an
 * operation somewhere else. Writes go to a new file with a random name
 * (O_CREAT|O_EXCL|O_NOFOLLOW, so a planted name only costs a retry) in the
 * target's directory and are renamed over the target when complete;
 * gVisor 20240729 has no O_TMPFILE on its overlay or gofer mounts (measured).
 * The agent runs these with the same privileges as the sandbox's own root:
 * it keeps no capability in effect for them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "paths.h"

#define LIST_DEFAULT_LIMIT 100000
#define TEMP_ATTEMPTS 8

static void send_failure(uint32_t id, int error, const char *detail) {
  send_error(id, error, strerror(error), detail);
}

static int64_t entry_type(mode_t mode) {
  if (S_ISREG(mode)) return ENTRY_FILE;
  if (S_ISDIR(mode)) return ENTRY_DIRECTORY;
  if (S_ISLNK(mode)) return ENTRY_SYMLINK;
  return ENTRY_OTHER;
}

static void entry_fields(int directory, const char *name, const char *shown_name, const struct stat *info) {
  field_string(&agent.outgoing, TAG_NAME, shown_name);
  field_int(&agent.outgoing, TAG_TYPE, entry_type(info->st_mode));
  field_int(&agent.outgoing, TAG_SIZE, (int64_t)info->st_size);
  field_int(&agent.outgoing, TAG_MODE_BITS, info->st_mode & 07777);
  field_int(&agent.outgoing, TAG_MODIFIED_MS, (int64_t)info->st_mtim.tv_sec * 1000 + info->st_mtim.tv_nsec / 1000000);
  if (S_ISLNK(info->st_mode)) {
    char target[PATH_MAX_BYTES + 1];
    ssize_t length = readlinkat(directory, name, target, sizeof target - 1);
    if (length >= 0) field_bytes(&agent.outgoing, TAG_TARGET, target, (size_t)length);
  }
}

static const char *shown(const char *canonical) {
  return canonical[0] ? canonical : "/";
}

/* ---- read ---- */

static void read_start(uint32_t id, struct request *request, struct resolved *resolved) {
  if (!resolved->exists) return send_failure(id, ENOENT, NULL);
  if (!resolved->name[0] || S_ISDIR(resolved->info.st_mode)) return send_failure(id, EISDIR, NULL);
  if (request->offset < 0) return send_error(id, EINVAL, "offset must not be negative", NULL);
  int fd = openat(resolved->parent_fd, resolved->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return send_failure(id, errno, errno == ELOOP ? "symlink" : NULL);
  struct stat info;
  fstat(fd, &info);
  if (S_ISDIR(info.st_mode)) {
    close(fd);
    return send_failure(id, EISDIR, NULL);
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return send_error(id, EINVAL, "not a regular file (a device, fifo or socket); read it with a command instead", "not-regular");
  }
  struct stream *stream = stream_open(id, STREAM_READ);
  if (!stream) {
    close(fd);
    return send_error(id, EMFILE, "too many streams are open in the agent", NULL);
  }
  stream->file_fd = fd;
  stream->offset = request->offset;
  stream->remaining = request->limit < 0 ? INT64_MAX : request->limit;
  stream->size = (int64_t)info.st_size;
  files_read_pump(stream);
}

void files_read_pump(struct stream *stream) {
  static uint8_t chunk[DATA_CHUNK];
  bool ended = stream->remaining <= 0;
  while (!ended && stream->send_window[CHANNEL_OUTPUT] > 0 && !outgoing_full()) {
    int64_t want = stream->remaining;
    if (want > stream->send_window[CHANNEL_OUTPUT]) want = stream->send_window[CHANNEL_OUTPUT];
    if (want > (int64_t)sizeof chunk) want = sizeof chunk;
    ssize_t got = pread(stream->file_fd, chunk, (size_t)want, stream->offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      send_failure(stream->id, errno, NULL);
      stream_close(stream);
      return;
    }
    if (got > 0) send_data(stream->id, CHANNEL_OUTPUT, chunk, (size_t)got);
    stream->offset += got;
    stream->sent += got;
    stream->remaining -= got;
    stream->send_window[CHANNEL_OUTPUT] -= got;
    ended = got == 0 || stream->remaining <= 0;
  }
  /* held by the window or a full queue: WINDOW, or the queue draining, pumps again */
  if (!ended) return;
  size_t frame;
  send_ok_begin(stream->id, &frame);
  field_int(&agent.outgoing, TAG_SIZE, stream->size);
  field_int(&agent.outgoing, TAG_BYTES, stream->sent);
  frame_finish(&agent.outgoing, frame);
  stream_close(stream);
}

/* ---- write ---- */

static void write_start(uint32_t id, struct request *request, struct resolved *resolved) {
  if (!resolved->name[0]) return send_failure(id, EISDIR, NULL);
  if (resolved->exists && S_ISDIR(resolved->info.st_mode)) return send_failure(id, EISDIR, NULL);
  mode_t mode = 0644;
  if (resolved->exists && S_ISREG(resolved->info.st_mode)) mode = resolved->info.st_mode & 07777;
  else if (request->mode_bits >= 0) mode = (mode_t)(request->mode_bits & 07777);
  struct stream *stream = stream_open(id, STREAM_WRITE);
  if (!stream) return send_error(id, EMFILE, "too many streams are open in the agent", NULL);
  int fd = -1;
  for (int attempt = 0; attempt < TEMP_ATTEMPTS && fd < 0; attempt++) {
    uint8_t random[16];
    if (getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) break;
    char *name = stream->temp_name;
    int used = snprintf(name, sizeof stream->temp_name, ".airlock-");
    for (int i = 0; i < 16; i++) used += snprintf(name + used, sizeof stream->temp_name - (size_t)used, "%02x", random[i]);
    fd = openat(resolved->parent_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int error = errno;
    stream->temp_name[0] = 0;
    stream_close(stream);
    return send_failure(id, error, NULL);
  }
  /* The umask (022) took only group/other write bits: restore them when the mode wants them (one gofer round trip less otherwise). */
  if (mode & 022) fchmod(fd, mode);
  stream->file_fd = fd;
  stream->directory_fd = dup(resolved->parent_fd);
  stream->final_name = strdup(resolved->name);
}

static void write_abandon(struct stream *stream) {
  if (stream->temp_name[0] && stream->directory_fd >= 0) unlinkat(stream->directory_fd, stream->temp_name, 0);
  stream_close(stream);
}

void files_write_data(struct stream *stream, const uint8_t *bytes, size_t count) {
  size_t done = 0;
  while (done < count) {
    ssize_t wrote = write(stream->file_fd, bytes + done, count - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      int error = wrote < 0 ? errno : EIO;
      send_failure(stream->id, error, NULL);
      write_abandon(stream);
      return;
    }
    done += (size_t)wrote;
  }
  stream->written += (int64_t)count;
  stream_grant_input(stream, count);
}

void files_write_end(struct stream *stream) {
  if (close(stream->file_fd) != 0) {
    stream->file_fd = -1;
    send_failure(stream->id, errno, NULL);
    return write_abandon(stream);
  }
  stream->file_fd = -1;
  if (renameat(stream->directory_fd, stream->temp_name, stream->directory_fd, stream->final_name) != 0) {
    send_failure(stream->id, errno, NULL);
    return write_abandon(stream);
  }
  stream->temp_name[0] = 0;
  size_t frame;
  send_ok_begin(stream->id, &frame);
  field_int(&agent.outgoing, TAG_BYTES, stream->written);
  frame_finish(&agent.outgoing, frame);
  stream_close(stream);
}

void files_write_cancel(struct stream *stream) {
  write_abandon(stream);
}

/* ---- the rest: one answer each ---- */

static void stat_entry(uint32_t id, struct resolved *resolved) {
  if (!resolved->exists) return send_failure(id, ENOENT, NULL);
  size_t frame;
  send_ok_begin(id, &frame);
  /* the root names itself "/" */
  entry_fields(resolved->parent_fd, resolved->name[0] ? resolved->name : ".", resolved->name[0] ? resolved->name : "/", &resolved->info);
  field_string(&agent.outgoing, TAG_PATH, shown(resolved->canonical));
  frame_finish(&agent.outgoing, frame);
}

static void list_directory(uint32_t id, struct request *request, struct resolved *resolved) {
  if (!resolved->exists) return send_failure(id, ENOENT, NULL);
  if (!S_ISDIR(resolved->info.st_mode)) return send_failure(id, ENOTDIR, NULL);
  int fd = openat(resolved->parent_fd, resolved->name[0] ? resolved->name : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return send_failure(id, errno, errno == ELOOP ? "symlink" : NULL);
  DIR *directory = fdopendir(fd);
  if (!directory) {
    close(fd);
    return send_failure(id, errno, NULL);
  }
  int64_t limit = request->limit < 0 ? LIST_DEFAULT_LIMIT : request->limit;
  int64_t count = 0;
  bool truncated = false;
  struct dirent *entry;
  while ((entry = readdir(directory)) != NULL) {
    if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
    struct stat info;
    if (fstatat(dirfd(directory), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone meanwhile */
    if (count >= limit) {
      truncated = true;
      break;
    }
    size_t frame = frame_begin(&agent.outgoing, MSG_ENTRY, 0, id);
    entry_fields(dirfd(directory), entry->d_name, entry->d_name, &info);
    frame_finish(&agent.outgoing, frame);
    count++;
  }
  closedir(directory);
  size_t frame;
  send_ok_begin(id, &frame);
  field_int(&agent.outgoing, TAG_COUNT, count);
  field_int(&agent.outgoing, TAG_TRUNCATED, truncated);
  field_string(&agent.outgoing, TAG_PATH, shown(resolved->canonical));
  frame_finish(&agent.outgoing, frame);
}

static void make_directory(uint32_t id, struct resolved *resolved) {
  bool created = false;
  if (!resolved->exists && resolved->name[0]) {
    if (mkdirat(resolved->parent_fd, resolved->name, 0755) == 0) created = true;
    else if (errno != EEXIST) return send_failure(id, errno, NULL);
    fstatat(resolved->parent_fd, resolved->name, &resolved->info, AT_SYMLINK_NOFOLLOW);
  }
  if (!S_ISDIR(resolved->info.st_mode)) return send_failure(id, EEXIST, NULL);
  size_t frame;
  send_ok_begin(id, &frame);
  field_int(&agent.outgoing, TAG_CREATED, created);
  field_string(&agent.outgoing, TAG_PATH, shown(resolved->canonical));
  frame_finish(&agent.outgoing, frame);
}

/* Removes a tree without ever following a symlink: every step is relative to an fd opened with O_NOFOLLOW. */
static int remove_tree(int parent, const char *name, int depth) {
  if (depth > REMOVE_MAX_DEPTH) return EMLINK;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : errno;
  DIR *directory = fdopendir(fd);
  if (!directory) {
    int error = errno;
    close(fd);
    return error;
  }
  int error = 0;
  /* A second pass catches entries a concurrent writer added while the first one ran. */
  for (int pass = 0; pass < 3 && !error; pass++) {
    bool removed = false;
    rewinddir(directory);
    struct dirent *entry;
    while (!error && (entry = readdir(directory)) != NULL) {
      if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
      bool is_directory = entry->d_type == DT_DIR;
      if (entry->d_type == DT_UNKNOWN) {
        struct stat info;
        if (fstatat(dirfd(directory), entry->d_name, &info, AT_SYMLINK_NOFOLLOW) == 0) is_directory = S_ISDIR(info.st_mode);
      }
      int result = is_directory ? remove_tree(dirfd(directory), entry->d_name, depth + 1) : (unlinkat(dirfd(directory), entry->d_name, 0) == 0 ? 0 : errno);
      if (result == ENOENT) result = 0;
      if (result == 0) removed = true;
      error = result;
    }
    if (!removed) break;
  }
  closedir(directory);
  if (error) return error;
  return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : errno;
}

static void remove_entry(uint32_t id, struct request *request, struct resolved *resolved) {
  if (!resolved->name[0]) return send_error(id, EBUSY, "refusing to remove the root", "root");
  if (!resolved->exists) return send_failure(id, ENOENT, NULL);
  int error = 0;
  if (S_ISDIR(resolved->info.st_mode)) {
    if (!request->recursive) return send_failure(id, EISDIR, NULL);
    error = remove_tree(resolved->parent_fd, resolved->name, 0);
    if (error == EMLINK) return send_error(id, EMLINK, "the tree is nested too deep to remove here; remove it with a command", "too-deep");
  } else if (unlinkat(resolved->parent_fd, resolved->name, 0) != 0) {
    error = errno;
  }
  if (error) return send_failure(id, error, NULL);
  size_t frame;
  send_ok_begin(id, &frame);
  frame_finish(&agent.outgoing, frame);
}

static void rename_entry(uint32_t id, struct request *request, struct resolved *source) {
  if (!request->target) return send_error(id, EINVAL, "rename needs a target path", NULL);
  if (!source->name[0]) return send_error(id, EBUSY, "refusing to rename the root", "root");
  if (!source->exists) return send_failure(id, ENOENT, NULL);
  struct resolve_options options = {.symlinks = (int)request->symlinks, .create_parents = request->parents != 0};
  struct resolved target;
  const char *detail = NULL;
  int error = resolve_path(request->target, &options, &target, &detail);
  if (error) return send_error(id, error, "cannot resolve the target path", detail);
  if (!target.name[0]) {
    close(target.parent_fd);
    return send_error(id, EBUSY, "refusing to replace the root", "root");
  }
  unsigned flags = request->no_replace ? RENAME_NOREPLACE : 0;
  int result = renameat2(source->parent_fd, source->name, target.parent_fd, target.name, flags);
  if (result != 0 && flags && (errno == ENOSYS || errno == EINVAL)) {
    /* no RENAME_NOREPLACE here: check, then rename (a race can still replace; the caller asked on a best-effort basis) */
    struct stat info;
    if (fstatat(target.parent_fd, target.name, &info, AT_SYMLINK_NOFOLLOW) == 0) errno = EEXIST;
    else result = renameat(source->parent_fd, source->name, target.parent_fd, target.name);
  }
  error = result == 0 ? 0 : errno;
  close(target.parent_fd);
  if (error) return send_failure(id, error, NULL);
  size_t frame;
  send_ok_begin(id, &frame);
  field_string(&agent.outgoing, TAG_PATH, shown(target.canonical));
  frame_finish(&agent.outgoing, frame);
}

static void canonical_path(uint32_t id, struct resolved *resolved) {
  size_t frame;
  send_ok_begin(id, &frame);
  field_string(&agent.outgoing, TAG_PATH, shown(resolved->canonical));
  field_int(&agent.outgoing, TAG_CREATED, 0);
  frame_finish(&agent.outgoing, frame);
}

void files_handle(uint8_t type, uint32_t id, struct request *request) {
  if (!request->path) return send_error(id, EINVAL, "the request has no path", NULL);
  if (request->symlinks != SYMLINKS_REFUSE && request->symlinks != SYMLINKS_FOLLOW) return send_error(id, EINVAL, "symlinks must be 0 (refuse) or 1 (follow)", NULL);
  struct resolve_options options = {.symlinks = (int)request->symlinks};
  switch (type) {
    case MSG_READ:
    case MSG_LIST: options.follow_last = true; break;
    case MSG_STAT:
    case MSG_CANONICAL: options.follow_last = request->follow_last != 0; break;
    case MSG_MKDIR:
      /* mkdir -p over a link to a directory is fine when following; refused, the link is just "exists" */
      options.follow_last = request->symlinks == SYMLINKS_FOLLOW;
      options.create_parents = request->parents != 0;
      break;
    case MSG_WRITE: options.create_parents = request->parents != 0; break;
    default: break;
  }
  if (type == MSG_CANONICAL) {
    options.symlinks = SYMLINKS_FOLLOW;
    options.allow_missing = true;
  }
  struct resolved resolved;
  const char *detail = NULL;
  int error = resolve_path(request->path, &options, &resolved, &detail);
  if (error) {
    char message[160];
    snprintf(message, sizeof message, "%s", strerror(error));
    return send_error(id, error, message, detail);
  }
  switch (type) {
    case MSG_READ: read_start(id, request, &resolved); break;
    case MSG_WRITE: write_start(id, request, &resolved); break;
    case MSG_STAT: stat_entry(id, &resolved); break;
    case MSG_LIST: list_directory(id, request, &resolved); break;
    case MSG_MKDIR: make_directory(id, &resolved); break;
    case MSG_REMOVE: remove_entry(id, request, &resolved); break;
    case MSG_RENAME: rename_entry(id, request, &resolved); break;
    case MSG_CANONICAL: canonical_path(id, &resolved); break;
    default: break;
  }
  if (resolved.parent_fd >= 0) close(resolved.parent_fd);
}
