/* Race-free path resolution beneath the agent's root (see paths.c). */
#ifndef AIRLOCK_PATHS_H
#define AIRLOCK_PATHS_H

#include <stdbool.h>
#include <sys/stat.h>

#include "protocol.h"

/* Where a path leads: its parent directory, held open, and the last name in it. */
struct resolved {
  /* O_PATH fd of the directory holding `name` (the root itself when the path is "/") */
  int parent_fd;
  /* last component; "" only for the root */
  char name[NAME_MAX_BYTES + 1];
  /* the path with every symlink followed and every "." and ".." gone */
  char canonical[PATH_MAX_BYTES + 1];
  /* whether `name` exists in `parent_fd` (never following a final symlink) */
  bool exists;
  struct stat info;
};

/* How to resolve. */
struct resolve_options {
  /* SYMLINKS_REFUSE: any symlink met is an error; SYMLINKS_FOLLOW: followed, never out of the root */
  int symlinks;
  /* follow a symlink in the last component too (with SYMLINKS_FOLLOW) */
  bool follow_last;
  /* create missing directories on the way (mkdir -p) */
  bool create_parents;
  /* a missing or unsearchable directory on the way ends resolution with the rest kept as written (canonical paths) */
  bool allow_missing;
};

/*
 * Resolves `path` (absolute) beneath the root. Returns 0 or an errno, with
 * `detail` naming the kind of failure for the host ("symlink",
 * "too-many-links", "name-too-long", "path-too-long", "too-many-components",
 * "not-absolute"). On success the caller closes `parent_fd`.
 */
int resolve_path(const char *path, const struct resolve_options *options, struct resolved *out, const char **detail);

#endif
