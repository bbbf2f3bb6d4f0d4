/* The fields of one request frame, decoded into C strings and integers. */
#ifndef AIRLOCK_REQUEST_H
#define AIRLOCK_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Integer fields a request may carry; absent ones keep their defaults. */
struct request {
  char **args; /* NULL-terminated */
  size_t arg_count;
  char **env; /* NULL-terminated, NAME=VALUE */
  size_t env_count;
  const char *cwd;
  const char *path;
  const char *target;
  const char *log_path;
  const char *hostname;
  const char *machine_id;
  const uint8_t *entropy;
  size_t entropy_length;
  int64_t exec_flags;
  int64_t process_limit;
  int64_t rows;
  int64_t columns;
  int64_t symlinks;
  int64_t follow_last;
  int64_t offset;
  int64_t limit;
  int64_t parents;
  int64_t recursive;
  int64_t no_replace;
  int64_t mode_bits;
  int64_t pid;
  int64_t signal;
  int64_t port;
  int64_t bytes;
  char *arena; /* owns every string above */
};

/*
 * Decodes a payload. Returns 0, or an errno (EINVAL: a malformed field, a
 * string holding NUL, an integer field of the wrong size) with `why` set.
 */
int request_parse(struct request *request, const uint8_t *payload, uint32_t length, const char **why);
void request_free(struct request *request);

#endif
