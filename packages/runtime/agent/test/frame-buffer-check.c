/* Checks the outgoing buffer's frames survive the buffer moving its unsent bytes while a frame is built:
   part of the buffer sent (start > 0), then a frame that makes it grow. Prints "ok" or what went wrong;
   test/unit/drivers/agent-frame-buffer.test.ts compiles and runs it. */
#include <stdio.h>
#include <string.h>

#include "../src/buffer.h"
#include "../src/protocol.h"

int main(void) {
  struct buffer buffer = {0};
  uint8_t filler[3000];
  memset(filler, 'x', sizeof filler);
  /* A first frame of 3000 bytes, then the host takes 2000 of it (a partial send under backpressure). */
  size_t first = frame_begin(&buffer, 1, 0, 7);
  field_bytes(&buffer, 1, filler, sizeof filler);
  frame_finish(&buffer, first);
  buffer_consume(&buffer, 2000);
  /* A second frame whose payload needs more room than is left: the buffer moves its unsent bytes first. */
  uint8_t payload[5000];
  memset(payload, 'y', sizeof payload);
  size_t second = frame_begin(&buffer, 2, 0, 9);
  field_bytes(&buffer, 1, payload, sizeof payload);
  frame_finish(&buffer, second);
  /* Walk the unsent bytes as the host would: the rest of the first frame, then a whole second frame. */
  const uint8_t *unsent = buffer.data + buffer.start;
  size_t first_length = 4 + (FRAME_HEADER_BYTES - 4) + 6 + sizeof filler;
  size_t rest = first_length - 2000;
  if (buffer_size(&buffer) < rest + FRAME_HEADER_BYTES) {
    printf("too few unsent bytes: %zu\n", buffer_size(&buffer));
    return 1;
  }
  uint32_t length = read_u32(unsent + rest);
  uint32_t expected = (uint32_t)(FRAME_HEADER_BYTES - 4 + 6 + sizeof payload);
  if (length != expected) {
    printf("second frame's length on the wire is %u, expected %u\n", length, expected);
    return 1;
  }
  if (unsent[rest + 4] != 2 || read_u32(unsent + rest + 8) != 9) {
    printf("second frame's header is not where its length says\n");
    return 1;
  }
  buffer_free(&buffer);
  printf("ok\n");
  return 0;
}
