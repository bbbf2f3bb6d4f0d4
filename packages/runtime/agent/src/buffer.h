/* Growable byte buffers and the frame/field encoding on top of them. */
#ifndef AIRLOCK_BUFFER_H
#define AIRLOCK_BUFFER_H

#include <stddef.h>
#include <stdint.h>

/* A byte buffer consumed from `start`; bytes live in data[start, length). */
struct buffer {
  uint8_t *data;
  size_t start;
  size_t length;
  size_t capacity;
};

void buffer_reserve(struct buffer *buffer, size_t more);
void buffer_append(struct buffer *buffer, const void *bytes, size_t count);
void buffer_consume(struct buffer *buffer, size_t count);
size_t buffer_size(const struct buffer *buffer);
void buffer_free(struct buffer *buffer);

/* Starts a frame; returns the offset to hand to frame_finish. */
size_t frame_begin(struct buffer *buffer, uint8_t type, uint8_t flags, uint32_t stream);
void frame_finish(struct buffer *buffer, size_t offset);
void field_int(struct buffer *buffer, uint16_t tag, int64_t value);
void field_bytes(struct buffer *buffer, uint16_t tag, const void *bytes, size_t count);
void field_string(struct buffer *buffer, uint16_t tag, const char *text);

uint32_t read_u32(const uint8_t *bytes);
int64_t read_i64(const uint8_t *bytes);

/* Walks the fields of a payload: 1 a field, 0 the end, -1 malformed. */
struct field_reader {
  const uint8_t *next;
  const uint8_t *end;
};
int field_next(struct field_reader *reader, uint16_t *tag, const uint8_t **value, uint32_t *count);

#endif
