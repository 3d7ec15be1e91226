/*
 * etcd_http.h: the parts of an etcd v3 JSON-gateway client that the C peers share
 * (etcd_floor.c, mirror_floor.c): one kept-alive HTTP/1.1 connection per stream, requests in
 * one write(2) each, responses read with Content-Length or chunked encoding, base64, the few
 * JSON fields of etcd's answers found by text search (no JSON parser), and the watch stream.
 * Everything is static inline: each program takes what it uses. Errors end the program with
 * "NAME: message" on standard error and status 1.
 */
#ifndef CCSYNC_BENCH_ETCD_HTTP_H
#define CCSYNC_BENCH_ETCD_HTTP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void fail(const char *format, const char *detail) {
  fprintf(stderr, "%s: ", program_invocation_short_name);
  fprintf(stderr, format, detail);
  fprintf(stderr, "\n");
  exit(1);
}

struct buffer { char *bytes; size_t length, capacity; };

static inline void reserve(struct buffer *b, size_t capacity) {
  if (b->capacity >= capacity) return;
  size_t grown = b->capacity ? b->capacity : 4096;
  while (grown < capacity) grown *= 2;
  b->bytes = realloc(b->bytes, grown);
  if (!b->bytes) fail("%s", "out of memory");
  b->capacity = grown;
}

static inline void append(struct buffer *b, const char *bytes, size_t length) {
  reserve(b, b->length + length + 1);
  memcpy(b->bytes + b->length, bytes, length);
  b->length += length;
  b->bytes[b->length] = 0;
}

static inline void append_text(struct buffer *b, const char *text) { append(b, text, strlen(text)); }

/* ---- base64 ---- */

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static inline void base64_encode(struct buffer *out, const char *bytes, size_t length) {
  reserve(out, out->length + (length + 2) / 3 * 4 + 1);
  char *to = out->bytes + out->length;
  const unsigned char *from = (const unsigned char *)bytes;
  size_t i = 0;
  for (; i + 2 < length; i += 3) {
    uint32_t v = (uint32_t)from[i] << 16 | (uint32_t)from[i + 1] << 8 | from[i + 2];
    *to++ = alphabet[v >> 18]; *to++ = alphabet[v >> 12 & 63]; *to++ = alphabet[v >> 6 & 63]; *to++ = alphabet[v & 63];
  }
  if (i < length) {
    uint32_t v = (uint32_t)from[i] << 16 | (i + 1 < length ? (uint32_t)from[i + 1] << 8 : 0);
    *to++ = alphabet[v >> 18]; *to++ = alphabet[v >> 12 & 63];
    *to++ = i + 1 < length ? alphabet[v >> 6 & 63] : '=';
    *to++ = '=';
  }
  out->length = (size_t)(to - out->bytes);
  out->bytes[out->length] = 0;
}

static inline int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static inline void base64_decode(struct buffer *out, const char *text, size_t length) {
  out->length = 0;
  reserve(out, length / 4 * 3 + 4);
  uint32_t v = 0;
  int bits = 0;
  for (size_t i = 0; i < length; i++) {
    int d = base64_value(text[i]);
    if (d < 0) {
      if (text[i] == '=') break;
      fail("%s", "bad base64 in a response");
    }
    v = v << 6 | (uint32_t)d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->bytes[out->length++] = (char)(v >> bits & 0xff);
    }
  }
  out->bytes[out->length] = 0;
}

/* ---- one kept-alive HTTP/1.1 connection ---- */

struct connection {
  int fd;
  char host[128];
  char port[16];
  char input[65536];  /* received, not yet consumed: [start, end) */
  size_t start, end;
  long chunk_left;    /* a streamed (chunked) body: bytes left in the current chunk, -1 at a size line */
};

static inline void parse_endpoint(const char *endpoint, char *host, size_t host_size, char *port, size_t port_size) {
  const char *colon = strrchr(endpoint, ':');
  if (!colon) fail("endpoint '%s' is not HOST:PORT", endpoint);
  snprintf(host, host_size, "%.*s", (int)(colon - endpoint), endpoint);
  snprintf(port, port_size, "%s", colon + 1);
}

static inline void open_connection(struct connection *c, const char *endpoint) {
  memset(c, 0, sizeof *c);
  parse_endpoint(endpoint, c->host, sizeof c->host, c->port, sizeof c->port);
  struct addrinfo hints = {0}, *found;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(c->host, c->port, &hints, &found) != 0) fail("cannot resolve '%s'", endpoint);
  c->fd = -1;
  for (struct addrinfo *a = found; a && c->fd < 0; a = a->ai_next) {
    c->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (c->fd >= 0 && connect(c->fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(c->fd);
      c->fd = -1;
    }
  }
  freeaddrinfo(found);
  if (c->fd < 0) fail("cannot connect to '%s'", endpoint);
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Reads more bytes into the input buffer; 0 at end of stream. */
static inline size_t fill(struct connection *c) {
  if (c->start == c->end) c->start = c->end = 0;
  if (c->end == sizeof c->input) {
    memmove(c->input, c->input + c->start, c->end - c->start);
    c->end -= c->start;
    c->start = 0;
  }
  for (;;) {
    ssize_t got = read(c->fd, c->input + c->end, sizeof c->input - c->end);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read from etcd: %s", strerror(errno));
    c->end += (size_t)got;
    return (size_t)got;
  }
}

/* One line (CRLF-terminated) of the response head or of chunk framing, without the CRLF. */
static inline void read_line(struct connection *c, char *line, size_t size) {
  for (;;) {
    char *newline = memchr(c->input + c->start, '\n', c->end - c->start);
    if (newline) {
      size_t length = (size_t)(newline - (c->input + c->start));
      if (length > 0 && c->input[c->start + length - 1] == '\r') length--;
      snprintf(line, size, "%.*s", (int)length, c->input + c->start);
      c->start = (size_t)(newline - c->input) + 1;
      return;
    }
    if (fill(c) == 0) fail("%s", "etcd closed the connection");
  }
}

/* Moves `length` bytes of the stream into `out`. */
static inline void read_exactly(struct connection *c, struct buffer *out, size_t length) {
  while (length > 0) {
    if (c->start == c->end && fill(c) == 0) fail("%s", "etcd closed the connection");
    size_t take = c->end - c->start < length ? c->end - c->start : length;
    append(out, c->input + c->start, take);
    c->start += take;
    length -= take;
  }
}

static inline void write_all(int fd, const char *bytes, size_t length) {
  while (length > 0) {
    ssize_t written = write(fd, bytes, length);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) fail("write to etcd: %s", strerror(errno));
    bytes += written;
    length -= (size_t)written;
  }
}

/* Sends POST PATH with BODY in one write. */
static inline void send_post(struct connection *c, const char *path, const struct buffer *body, struct buffer *scratch) {
  char head[512];
  int head_length = snprintf(head, sizeof head,
                             "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n\r\n", path, c->host, c->port, body->length);
  scratch->length = 0;
  append(scratch, head, (size_t)head_length);
  append(scratch, body->bytes, body->length);
  write_all(c->fd, scratch->bytes, scratch->length);
}

/* Reads a response head; returns 1 when the body is chunked, else sets *length. */
static inline int read_head(struct connection *c, long *length) {
  char line[1024];
  read_line(c, line, sizeof line);
  int status = 0;
  if (sscanf(line, "HTTP/1.%*d %d", &status) != 1) fail("bad status line '%s'", line);
  if (status != 200) fail("etcd answered '%s'", line);
  int chunked = 0;
  *length = -1;
  for (;;) {
    read_line(c, line, sizeof line);
    if (line[0] == 0) break;
    if (strncasecmp(line, "Content-Length:", 15) == 0) *length = atol(line + 15);
    if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line + 18, "chunked")) chunked = 1;
  }
  if (!chunked && *length < 0) fail("%s", "a response with neither Content-Length nor chunked encoding");
  return chunked;
}

/* The next chunk of a chunked body appended to `out`; returns its size (0: the last chunk). */
static inline size_t read_chunk(struct connection *c, struct buffer *out) {
  char line[256];
  read_line(c, line, sizeof line);
  size_t size = (size_t)strtoul(line, NULL, 16);
  read_exactly(c, out, size);
  read_line(c, line, sizeof line);  /* the CRLF after the data (or the end of the trailers) */
  return size;
}

/* POST PATH with BODY; the whole response body into `response`. */
static inline void post(struct connection *c, const char *path, const struct buffer *body, struct buffer *response,
                 struct buffer *scratch) {
  send_post(c, path, body, scratch);
  long length;
  int chunked = read_head(c, &length);
  response->length = 0;
  reserve(response, 1);
  if (chunked) {
    while (read_chunk(c, response) > 0) {}
  } else {
    read_exactly(c, response, (size_t)length);
  }
  response->bytes[response->length] = 0;
}

/* ---- the few JSON fields of etcd's answers ---- */

/* The text of the string member NAME ("name":"...") at or after `from`; NULL when absent. */
static inline const char *string_member(const char *from, const char *name, size_t *length) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", name);
  const char *found = strstr(from, pattern);
  if (!found) return NULL;
  found += strlen(pattern);
  const char *end = strchr(found, '"');
  if (!end) return NULL;
  *length = (size_t)(end - found);
  return found;
}

struct key_state { int exists; long long mod_revision; struct buffer value; };

/* Reads the first of "kvs" at or after `from` (a range response, or a failed txn's range). */
static inline void read_kvs(const char *from, struct key_state *state) {
  const char *kvs = strstr(from, "\"kvs\":[");
  state->exists = kvs != NULL;
  state->value.length = 0;
  if (!kvs) return;
  size_t length;
  const char *revision = string_member(kvs, "mod_revision", &length);
  if (!revision) fail("%s", "no mod_revision in a range answer");
  state->mod_revision = atoll(revision);
  const char *value = string_member(kvs, "value", &length);
  if (value) base64_decode(&state->value, value, length);  /* absent: the empty value */
  else reserve(&state->value, 1);
}

/* ---- a client of one key: its connection and buffers ---- */

struct client {
  struct connection connection;
  struct buffer key64, body, response, scratch, changed, changed64;
  struct buffer stamp_key64, stamp64;  /* KEY.ccsync-write, and the stamp of a write */
  struct key_state state;
  long retries;
};

static inline void client_open(struct client *client, const char *endpoint, const char *key) {
  memset(client, 0, sizeof *client);
  open_connection(&client->connection, endpoint);
  base64_encode(&client->key64, key, strlen(key));
  char stamp_key[1024];
  int length = snprintf(stamp_key, sizeof stamp_key, "%s.ccsync-write", key);
  base64_encode(&client->stamp_key64, stamp_key, (size_t)length);
}

static inline void range(struct client *client) {
  client->body.length = 0;
  append_text(&client->body, "{\"key\":\"");
  append_text(&client->body, client->key64.bytes);
  append_text(&client->body, "\"}");
  post(&client->connection, "/v3/kv/range", &client->body, &client->response, &client->scratch);
  read_kvs(client->response.bytes, &client->state);
}

/* ---- watching ---- */

/* The number after "sequence" in `text`, or the number `text` is; -2 when neither. */
static inline long long sequence_in(const char *text) {
  const char *found = strstr(text, "\"sequence\"");
  if (found) {
    found += 10;
    while (*found == ' ' || *found == ':' || *found == '\n') found++;
  } else {
    found = text;
    while (*found == ' ') found++;
  }
  if (!(*found == '-' || (*found >= '0' && *found <= '9'))) return -2;
  return atoll(found);
}

/* ---- requests without waiting for their answer, and the watch stream ---- */

/* Sends PUT of VALUE under the client's key on its connection, without reading the answer
 * (read it with read_body). */
static inline void send_put(struct client *client, const char *value, size_t length) {
  client->changed64.length = 0;
  base64_encode(&client->changed64, value, length);
  client->body.length = 0;
  append_text(&client->body, "{\"key\":\"");
  append_text(&client->body, client->key64.bytes);
  append_text(&client->body, "\",\"value\":\"");
  append(&client->body, client->changed64.bytes, client->changed64.length);
  append_text(&client->body, "\"}");
  send_post(&client->connection, "/v3/kv/put", &client->body, &client->scratch);
}

/* Reads one whole response (head and body) into `response`. */
static inline void read_body(struct connection *c, struct buffer *response) {
  long length;
  response->length = 0;
  reserve(response, 1);
  if (read_head(c, &length)) {
    while (read_chunk(c, response) > 0) {}
  } else {
    read_exactly(c, response, (size_t)length);
  }
  response->bytes[response->length] = 0;
}

/* The header revision of a response (0 when absent). */
static inline long long header_revision(const char *response) {
  size_t length;
  const char *revision = string_member(response, "revision", &length);
  return revision ? atoll(revision) : 0;
}

/* A watch stream on its own connection: one POST /v3/watch whose chunked answer carries one
 * JSON message per line. */
struct watch_stream {
  struct connection connection;
  struct buffer pending, message;
};

/* Opens a watch of the base64 key `key64` from `revision` and waits for etcd's "created"
 * message, so that the watch is in place when it returns. */
static inline void watch_open(struct watch_stream *w, const char *endpoint, const char *key64, long long revision);

/* The next message of the stream into w->message (without its newline); 0 when the stream
 * ended. Blocks until a whole message is there. */
static inline int watch_next(struct watch_stream *w) {
  char *newline;
  while (!(newline = memchr(w->pending.bytes, '\n', w->pending.length))) {
    if (read_chunk(&w->connection, &w->pending) == 0) return 0;
  }
  size_t length = (size_t)(newline - w->pending.bytes);
  w->message.length = 0;
  append(&w->message, w->pending.bytes, length);
  memmove(w->pending.bytes, newline + 1, w->pending.length - length - 1);
  w->pending.length -= length + 1;
  w->pending.bytes[w->pending.length] = 0;
  if (strstr(w->message.bytes, "\"error\"")) fail("watch error: %s", w->message.bytes);
  return 1;
}

/* Whether bytes of the stream are already received but not consumed (poll(2) would not tell). */
static inline int watch_buffered(const struct watch_stream *w) {
  return w->connection.start < w->connection.end || memchr(w->pending.bytes, '\n', w->pending.length) != NULL;
}

static inline void watch_open(struct watch_stream *w, const char *endpoint, const char *key64, long long revision) {
  memset(w, 0, sizeof *w);
  open_connection(&w->connection, endpoint);
  struct buffer body = {0}, scratch = {0};
  char request[512];
  snprintf(request, sizeof request, "{\"create_request\":{\"key\":\"%s\",\"start_revision\":\"%lld\"}}", key64, revision);
  append_text(&body, request);
  send_post(&w->connection, "/v3/watch", &body, &scratch);
  free(body.bytes);
  free(scratch.bytes);
  long length;
  if (!read_head(&w->connection, &length)) fail("%s", "the watch answer is not a chunked stream");
  reserve(&w->pending, 1);
  reserve(&w->message, 1);
  w->pending.bytes[0] = w->message.bytes[0] = 0;
  do {
    if (!watch_next(w)) fail("%s", "the watch stream ended before it was created");
  } while (!strstr(w->message.bytes, "\"created\":true"));
}

/* The value of the event at or after `*event` in a watch message, decoded into `value`, and
 * `*event` moved past it; 0 when no event with a value is left (a delete has none). */
static inline int watch_event_value(const char **event, struct buffer *value) {
  while ((*event = strstr(*event, "\"kv\":{"))) {
    const char *next = strstr(*event + 6, "\"kv\":{");
    size_t length;
    const char *encoded = string_member(*event, "value", &length);
    *event += 6;
    if (encoded && (!next || encoded < next)) {
      base64_decode(value, encoded, length);
      return 1;
    }
  }
  return 0;
}

/* ---- an observer process ---- */

/* Starts ARGV (argv[0] looked up in PATH) with its standard output on a new pipe; returns the
 * pipe's reading end and sets *pid. */
static inline int spawn_on_pipe(char **argv, pid_t *pid) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) fail("pipe: %s", strerror(errno));
  pid_t child = fork();
  if (child < 0) fail("fork: %s", strerror(errno));
  if (child == 0) {
    dup2(pipe_fds[1], 1);
    execvp(argv[0], argv);
    fprintf(stderr, "%s: cannot run '%s': %s\n", program_invocation_short_name, argv[0], strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);
  *pid = child;
  return pipe_fds[0];
}

#endif
