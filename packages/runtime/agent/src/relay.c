/*
 * Port relays: a TCP connection to 127.0.0.1:PORT inside the sandbox whose
 * two directions are the stream's channels (host input → the service,
 * the service → channel 1). Either side's end is a half-close; the stream
 * finishes when both directions ended, or at once on CANCEL.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

void relay_start(uint32_t id, struct request *request) {
  if (request->port < 1 || request->port > 65535) {
    send_error(id, EINVAL, "port must be 1 to 65535", NULL);
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    send_error(id, errno, strerror(errno), NULL);
    return;
  }
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)request->port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int result = connect(fd, (struct sockaddr *)&address, sizeof address);
  if (result != 0 && errno != EINPROGRESS) {
    int error = errno;
    close(fd);
    send_error(id, error, strerror(error), NULL);
    return;
  }
  struct stream *stream = stream_open(id, STREAM_RELAY);
  if (!stream) {
    close(fd);
    send_error(id, EMFILE, "too many streams are open in the agent", NULL);
    return;
  }
  stream_add_endpoint(stream, fd, CHANNEL_OUTPUT, true);
  stream->connecting = true;
  if (result == 0) relay_connected(stream);
  else stream_refresh(stream);
}

void relay_connected(struct stream *stream) {
  int error = 0;
  socklen_t size = sizeof error;
  getsockopt(stream->endpoints[0].fd, SOL_SOCKET, SO_ERROR, &error, &size);
  if (error) {
    send_error(stream->id, error, strerror(error), NULL);
    stream_close(stream);
    return;
  }
  stream->connecting = false;
  send_simple(MSG_CONNECTED, 0, stream->id);
  if (buffer_size(&stream->input) > 0) stream_write_input(stream, &stream->endpoints[0]);
  relay_try_finish(stream);
  if (stream->kind != STREAM_FREE) stream_refresh(stream);
}

void relay_try_finish(struct stream *stream) {
  if (stream->kind != STREAM_RELAY || stream->connecting) return;
  struct endpoint *socket_end = &stream->endpoints[0];
  if (socket_end->fd < 0) return;
  if (!stream->output_closed && (stream->input_broken || (stream->input_ended && buffer_size(&stream->input) == 0))) {
    shutdown(socket_end->fd, SHUT_WR);
    stream->output_closed = true;
  }
  if (socket_end->eof && stream->output_closed) {
    size_t frame;
    send_ok_begin(stream->id, &frame);
    frame_finish(&agent.outgoing, frame);
    stream_close(stream);
  }
}
