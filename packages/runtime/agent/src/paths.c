/*
 * Path resolution that a concurrent process cannot redirect. The path is
 * walked one component at a time from an fd of the root, each directory
 * opened relative to the previous one with O_PATH|O_NOFOLLOW, so a symlink
 * planted or swapped in during the walk is either seen and handled here or
 * makes the open fail; it is never followed by the kernel behind our back.
 * Symlinks are expanded here, by hand: an absolute target restarts at the
 * root, ".." never climbs above it. gVisor 20240729 has no openat2
 * (RESOLVE_BENEATH), measured, hence the walk.
 *
 * With SYMLINKS_REFUSE any symlink met is an error ("symlink"): the control
 * plane resolves a path once (canonical, for policy) and then runs the
 * operation on that canonical path with symlinks refused, so what the
 * operation touches is what policy saw, or the call fails.
 */
#define _GNU_SOURCE
#include "paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* Room for the path plus every symlink target spliced into it. */
#define PENDING_MAX (PATH_MAX_BYTES * 8)

static int fail(const char **detail, const char *why, int error) {
  *detail = why;
  return error;
}

static int check_path(const char *path, const char **detail) {
  if (path[0] != '/') return fail(detail, "not-absolute", EINVAL);
  if (strlen(path) > PATH_MAX_BYTES) return fail(detail, "path-too-long", ENAMETOOLONG);
  int components = 0;
  for (const char *cursor = path; *cursor;) {
    while (*cursor == '/') cursor++;
    if (!*cursor) break;
    const char *end = strchrnul(cursor, '/');
    if (end - cursor > NAME_MAX_BYTES) return fail(detail, "name-too-long", ENAMETOOLONG);
    if (++components > PATH_MAX_COMPONENTS) return fail(detail, "too-many-components", EINVAL);
    cursor = end;
  }
  return 0;
}

static int open_root(void) {
  return openat(agent.root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int append(char *canonical, const char *name, size_t length, const char **detail) {
  size_t used = strlen(canonical);
  if (used + 1 + length > PATH_MAX_BYTES) return fail(detail, "path-too-long", ENAMETOOLONG);
  canonical[used] = '/';
  memcpy(canonical + used + 1, name, length);
  canonical[used + 1 + length] = 0;
  return 0;
}

static void pop(char *canonical, char *name_out) {
  char *slash = strrchr(canonical, '/');
  if (!slash) return;
  if (name_out) strcpy(name_out, slash + 1);
  *slash = 0;
}

/* Opens the directory at a canonical path again, refusing symlinks: it had none a moment ago. */
static int walk_canonical(const char *canonical, int *fd_out, const char **detail) {
  int fd = open_root();
  if (fd < 0) return errno;
  const char *cursor = canonical;
  while (*cursor) {
    while (*cursor == '/') cursor++;
    if (!*cursor) break;
    const char *end = strchrnul(cursor, '/');
    char name[NAME_MAX_BYTES + 1];
    memcpy(name, cursor, (size_t)(end - cursor));
    name[end - cursor] = 0;
    int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int error = errno;
    close(fd);
    if (next < 0) return error == ELOOP || error == ENOTDIR ? fail(detail, "symlink", ELOOP) : error;
    fd = next;
    cursor = end;
  }
  *fd_out = fd;
  return 0;
}

/* The rest of a path below a missing directory, applied to the canonical path as text. */
static int append_lexically(char *canonical, const char *rest, const char **detail) {
  while (*rest) {
    while (*rest == '/') rest++;
    if (!*rest) break;
    const char *end = strchrnul(rest, '/');
    size_t length = (size_t)(end - rest);
    if (length == 2 && rest[0] == '.' && rest[1] == '.') pop(canonical, NULL);
    else if (!(length == 1 && rest[0] == '.')) {
      int error = append(canonical, rest, length, detail);
      if (error) return error;
    }
    rest = end;
  }
  return 0;
}

/* Replaces the component just read with the link's target: pending becomes target + "/" + rest. */
static int expand_link(int directory, const char *name, char *pending, size_t *cursor, char *canonical, int *current, int *hops, const char **detail) {
  if (++*hops > SYMLINK_MAX_HOPS) return fail(detail, "too-many-links", ELOOP);
  char target[PATH_MAX_BYTES + 2];
  ssize_t length = readlinkat(directory, name, target, sizeof target);
  /* it stopped being a link since we looked: someone is swapping it */
  if (length < 0) return errno == EINVAL ? fail(detail, "symlink", ELOOP) : errno;
  if ((size_t)length > PATH_MAX_BYTES) return fail(detail, "path-too-long", ENAMETOOLONG);
  target[length] = 0;
  size_t rest = strlen(pending + *cursor);
  if ((size_t)length + 1 + rest >= PENDING_MAX) return fail(detail, "path-too-long", ENAMETOOLONG);
  memmove(pending + length + 1, pending + *cursor, rest + 1);
  memcpy(pending, target, (size_t)length);
  pending[length] = '/';
  *cursor = 0;
  if (target[0] == '/') {
    int root = open_root();
    if (root < 0) return errno;
    close(*current);
    *current = root;
    canonical[0] = 0;
  }
  return 0;
}

static int finish_at(int parent, const char *name, struct resolved *out) {
  out->parent_fd = parent;
  strcpy(out->name, name);
  out->exists = fstatat(parent, name, &out->info, AT_SYMLINK_NOFOLLOW) == 0;
  if (!out->exists && errno != ENOENT) return errno;
  return 0;
}

int resolve_path(const char *path, const struct resolve_options *options, struct resolved *out, const char **detail) {
  *detail = NULL;
  memset(out, 0, sizeof *out);
  out->parent_fd = -1;
  int error = check_path(path, detail);
  if (error) return error;
  char *pending = malloc(PENDING_MAX);
  if (!pending) return ENOMEM;
  strcpy(pending, path);
  size_t cursor = 0;
  int hops = 0;
  int current = open_root();
  if (current < 0) {
    free(pending);
    return errno;
  }
  char *canonical = out->canonical;
  canonical[0] = 0;
  for (;;) {
    while (pending[cursor] == '/') cursor++;
    if (!pending[cursor]) break;
    size_t start = cursor;
    while (pending[cursor] && pending[cursor] != '/') cursor++;
    size_t length = cursor - start;
    if (length > NAME_MAX_BYTES) {
      error = fail(detail, "name-too-long", ENAMETOOLONG);
      goto failed;
    }
    char name[NAME_MAX_BYTES + 1];
    memcpy(name, pending + start, length);
    name[length] = 0;
    size_t after = cursor;
    while (pending[after] == '/') after++;
    bool last = pending[after] == 0;
    if (!strcmp(name, ".")) continue;
    if (!strcmp(name, "..")) {
      if (!canonical[0]) continue; /* ".." of the root is the root */
      pop(canonical, NULL);
      int parent;
      error = walk_canonical(canonical, &parent, detail);
      if (error) goto failed;
      close(current);
      current = parent;
      continue;
    }
    if (last) {
      struct stat info;
      if (fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode) && options->follow_last) {
        if (options->symlinks == SYMLINKS_REFUSE) {
          error = fail(detail, "symlink", ELOOP);
          goto failed;
        }
        error = expand_link(current, name, pending, &cursor, canonical, &current, &hops, detail);
        if (error) goto failed;
        continue;
      }
      error = append(canonical, name, length, detail);
      if (!error) error = finish_at(current, name, out);
      /* in a directory the sandbox may not search (a denyRead mask): the name is all there is to know */
      if (error == EACCES && options->allow_missing) {
        out->exists = false;
        error = 0;
      }
      if (error) goto failed;
      free(pending);
      return 0;
    }
    int next = openat(current, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && options->create_parents) {
      if (mkdirat(current, name, 0755) != 0 && errno != EEXIST) {
        error = errno;
        goto failed;
      }
      next = openat(current, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next >= 0) {
      error = append(canonical, name, length, detail);
      close(current);
      current = next;
      if (error) goto failed;
      continue;
    }
    error = errno;
    /* a missing directory, or one the sandbox may not search (a denyRead mask): the rest stays as written */
    if ((error == ENOENT || error == EACCES) && options->allow_missing) {
      error = append(canonical, name, length, detail);
      if (!error) error = append_lexically(canonical, pending + cursor, detail);
      if (error) goto failed;
      out->parent_fd = current;
      out->exists = false;
      free(pending);
      return 0;
    }
    if (error == ENOTDIR || error == ELOOP) {
      struct stat info;
      bool looked = fstatat(current, name, &info, AT_SYMLINK_NOFOLLOW) == 0;
      if ((looked && S_ISDIR(info.st_mode)) || (!looked && errno == ENOENT)) {
        /* It changed between the open and the look (someone is swapping it): look at this component again,
           bounded like links are. */
        if (++hops > SYMLINK_MAX_HOPS) {
          error = fail(detail, "too-many-links", ELOOP);
          goto failed;
        }
        cursor = start;
        continue;
      }
      if (looked && S_ISLNK(info.st_mode)) {
        if (options->symlinks == SYMLINKS_REFUSE) {
          error = fail(detail, "symlink", ELOOP);
          goto failed;
        }
        error = expand_link(current, name, pending, &cursor, canonical, &current, &hops, detail);
        if (error) goto failed;
        continue;
      }
      error = ENOTDIR;
    }
    goto failed;
  }
  /* The path ended on a directory we stand in ("/", or a trailing ".."): name it from its parent. */
  free(pending);
  pending = NULL;
  if (!canonical[0]) {
    out->parent_fd = current;
    out->exists = fstat(current, &out->info) == 0;
    return 0;
  }
  close(current);
  char name[NAME_MAX_BYTES + 1] = {0};
  pop(canonical, name);
  int parent;
  error = walk_canonical(canonical, &parent, detail);
  if (error) return error;
  append(canonical, name, strlen(name), detail);
  error = finish_at(parent, name, out);
  if (error) close(parent);
  return error;
failed:
  free(pending);
  close(current);
  out->parent_fd = -1;
  return error;
}
