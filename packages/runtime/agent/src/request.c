#include "request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "protocol.h"

static char *copy_string(char **cursor, const uint8_t *value, uint32_t count) {
  char *text = *cursor;
  memcpy(text, value, count);
  text[count] = 0;
  *cursor += count + 1;
  return text;
}

int request_parse(struct request *request, const uint8_t *payload, uint32_t length, const char **why) {
  memset(request, 0, sizeof *request);
  request->mode_bits = -1;
  request->limit = -1;
  request->process_limit = 0;
  request->symlinks = SYMLINKS_FOLLOW;
  /* First pass: count lists and string bytes, validate shapes. */
  struct field_reader reader = {payload, payload + length};
  uint16_t tag;
  const uint8_t *value;
  uint32_t count;
  size_t arena_bytes = 0;
  size_t args = 0;
  size_t envs = 0;
  int status;
  while ((status = field_next(&reader, &tag, &value, &count)) == 1) {
    switch (tag) {
      case TAG_ARG:
      case TAG_ENV:
      case TAG_CWD:
      case TAG_PATH:
      case TAG_TARGET:
      case TAG_LOG_PATH:
      case TAG_HOSTNAME:
      case TAG_MACHINE_ID:
        if (memchr(value, 0, count)) {
          *why = "a text field contains a NUL byte";
          return EINVAL;
        }
        arena_bytes += count + 1;
        if (tag == TAG_ARG) args++;
        if (tag == TAG_ENV) envs++;
        break;
      case TAG_EXEC_FLAGS:
      case TAG_PROCESS_LIMIT:
      case TAG_ROWS:
      case TAG_COLUMNS:
      case TAG_SYMLINKS:
      case TAG_FOLLOW_LAST:
      case TAG_OFFSET:
      case TAG_LIMIT:
      case TAG_PARENTS:
      case TAG_RECURSIVE:
      case TAG_NO_REPLACE:
      case TAG_MODE_BITS:
      case TAG_PID:
      case TAG_SIGNAL:
      case TAG_PORT:
      case TAG_BYTES:
        if (count != 8) {
          *why = "an integer field is not 8 bytes long";
          return EINVAL;
        }
        break;
      default:
        break; /* unknown tags belong to newer minor versions: ignored */
    }
  }
  if (status < 0) {
    *why = "a field runs past the end of its frame";
    return EINVAL;
  }
  size_t pointers = (args + 1 + envs + 1) * sizeof(char *);
  request->arena = malloc(pointers + arena_bytes + 1);
  if (!request->arena) {
    *why = "out of memory";
    return ENOMEM;
  }
  request->args = (char **)request->arena;
  request->env = request->args + args + 1;
  char *cursor = request->arena + pointers;
  reader = (struct field_reader){payload, payload + length};
  while (field_next(&reader, &tag, &value, &count) == 1) {
    switch (tag) {
      case TAG_ARG: request->args[request->arg_count++] = copy_string(&cursor, value, count); break;
      case TAG_ENV: request->env[request->env_count++] = copy_string(&cursor, value, count); break;
      case TAG_CWD: request->cwd = copy_string(&cursor, value, count); break;
      case TAG_PATH: request->path = copy_string(&cursor, value, count); break;
      case TAG_TARGET: request->target = copy_string(&cursor, value, count); break;
      case TAG_LOG_PATH: request->log_path = copy_string(&cursor, value, count); break;
      case TAG_HOSTNAME: request->hostname = copy_string(&cursor, value, count); break;
      case TAG_MACHINE_ID: request->machine_id = copy_string(&cursor, value, count); break;
      case TAG_ENTROPY:
        request->entropy = value;
        request->entropy_length = count;
        break;
      case TAG_EXEC_FLAGS: request->exec_flags = read_i64(value); break;
      case TAG_PROCESS_LIMIT: request->process_limit = read_i64(value); break;
      case TAG_ROWS: request->rows = read_i64(value); break;
      case TAG_COLUMNS: request->columns = read_i64(value); break;
      case TAG_SYMLINKS: request->symlinks = read_i64(value); break;
      case TAG_FOLLOW_LAST: request->follow_last = read_i64(value); break;
      case TAG_OFFSET: request->offset = read_i64(value); break;
      case TAG_LIMIT: request->limit = read_i64(value); break;
      case TAG_PARENTS: request->parents = read_i64(value); break;
      case TAG_RECURSIVE: request->recursive = read_i64(value); break;
      case TAG_NO_REPLACE: request->no_replace = read_i64(value); break;
      case TAG_MODE_BITS: request->mode_bits = read_i64(value); break;
      case TAG_PID: request->pid = read_i64(value); break;
      case TAG_SIGNAL: request->signal = read_i64(value); break;
      case TAG_PORT: request->port = read_i64(value); break;
      case TAG_BYTES: request->bytes = read_i64(value); break;
      default: break;
    }
  }
  request->args[request->arg_count] = NULL;
  request->env[request->env_count] = NULL;
  return 0;
}

void request_free(struct request *request) {
  free(request->arena);
  request->arena = NULL;
}
