#include "buffer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol.h"

static void out_of_memory(void) {
  /* pid 1 has nobody to report to; dying ends the sandbox, which the host reports. */
  static const char message[] = "airlock-agent: out of memory\n";
  (void)!write(2, message, sizeof message - 1);
  _exit(70);
}

void buffer_reserve(struct buffer *buffer, size_t more) {
  if (buffer->length + more <= buffer->capacity) return;
  if (buffer->start > 0) {
    /* Reuse the consumed head before growing. */
    memmove(buffer->data, buffer->data + buffer->start, buffer->length - buffer->start);
    buffer->length -= buffer->start;
    buffer->start = 0;
    if (buffer->length + more <= buffer->capacity) return;
  }
  size_t capacity = buffer->capacity ? buffer->capacity : 4096;
  while (capacity < buffer->length + more) capacity *= 2;
  uint8_t *grown = realloc(buffer->data, capacity);
  if (!grown) out_of_memory();
  buffer->data = grown;
  buffer->capacity = capacity;
}

void buffer_append(struct buffer *buffer, const void *bytes, size_t count) {
  buffer_reserve(buffer, count);
  memcpy(buffer->data + buffer->length, bytes, count);
  buffer->length += count;
}

void buffer_consume(struct buffer *buffer, size_t count) {
  buffer->start += count;
  if (buffer->start >= buffer->length) {
    buffer->start = 0;
    buffer->length = 0;
    /* Give back memory a burst of output took. */
    if (buffer->capacity > 4 * 1024 * 1024) {
      free(buffer->data);
      buffer->data = NULL;
      buffer->capacity = 0;
    }
  }
}

size_t buffer_size(const struct buffer *buffer) {
  return buffer->length - buffer->start;
}

void buffer_free(struct buffer *buffer) {
  free(buffer->data);
  memset(buffer, 0, sizeof *buffer);
}

static void put_u16(uint8_t *bytes, uint16_t value) {
  bytes[0] = (uint8_t)value;
  bytes[1] = (uint8_t)(value >> 8);
}

static void put_u32(uint8_t *bytes, uint32_t value) {
  for (int i = 0; i < 4; i++) bytes[i] = (uint8_t)(value >> (8 * i));
}

uint32_t read_u32(const uint8_t *bytes) {
  return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
}

int64_t read_i64(const uint8_t *bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; i--) value = value << 8 | bytes[i];
  return (int64_t)value;
}

size_t frame_begin(struct buffer *buffer, uint8_t type, uint8_t flags, uint32_t stream) {
  uint8_t header[FRAME_HEADER_BYTES] = {0};
  header[4] = type;
  header[5] = flags;
  put_u32(header + 8, stream);
  size_t offset = buffer->length;
  buffer_append(buffer, header, sizeof header);
  return offset;
}

void frame_finish(struct buffer *buffer, size_t offset) {
  put_u32(buffer->data + offset, (uint32_t)(buffer->length - offset - 4));
}

static void field_header(struct buffer *buffer, uint16_t tag, uint32_t count) {
  uint8_t header[FIELD_HEADER_BYTES];
  put_u16(header, tag);
  put_u32(header + 2, count);
  buffer_append(buffer, header, sizeof header);
}

void field_int(struct buffer *buffer, uint16_t tag, int64_t value) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)((uint64_t)value >> (8 * i));
  field_header(buffer, tag, 8);
  buffer_append(buffer, bytes, 8);
}

void field_bytes(struct buffer *buffer, uint16_t tag, const void *bytes, size_t count) {
  field_header(buffer, tag, (uint32_t)count);
  buffer_append(buffer, bytes, count);
}

void field_string(struct buffer *buffer, uint16_t tag, const char *text) {
  field_bytes(buffer, tag, text, strlen(text));
}

int field_next(struct field_reader *reader, uint16_t *tag, const uint8_t **value, uint32_t *count) {
  if (reader->next == reader->end) return 0;
  if ((size_t)(reader->end - reader->next) < FIELD_HEADER_BYTES) return -1;
  *tag = (uint16_t)(reader->next[0] | reader->next[1] << 8);
  *count = read_u32(reader->next + 2);
  if (*count > (size_t)(reader->end - reader->next) - FIELD_HEADER_BYTES) return -1;
  *value = reader->next + FIELD_HEADER_BYTES;
  reader->next += FIELD_HEADER_BYTES + *count;
  return 1;
}
