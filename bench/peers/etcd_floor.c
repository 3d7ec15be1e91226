/*
 * etcd_floor: one ccsync update on an etcd key, in plain C, the floor ccsync's etcd location
 * is held to; and the raw watch stream, the floor of propagation through etcd.
 *
 * It speaks etcd's v3 JSON gateway (grpc-gateway) over HTTP/1.1 on one kept-alive TCP
 * connection per process, as ccsync does. One update is exactly ccsync's requests:
 *
 *   POST /v3/kv/range {"key": KEY}                      -> value and mod_revision M (or no kvs)
 *   POST /v3/kv/txn   {"compare": [{"key": KEY, "target": "MOD", "result": "EQUAL",
 *                                    "mod_revision": "M"}]          (missing key: target CREATE,
 *                                                                    create_revision 0)
 *                      "success": [{"request_put": {"key": KEY, "value": NEW}},
 *                                  {"request_put": {"key": KEY.ccsync-write, "value": STAMP}}],
 *                      "failure": [{"request_range": {"key": KEY}}]}
 *
 * and when the compare fails, the failure branch's range gives the current value and revision:
 * the change is made again on it and a new txn sent, with no extra range. STAMP is the JSON
 * ccsync signs each write with, made the same way (64 random bits per process and a counter,
 * the wall-clock time in ISO 8601, host, user, pid and program): the exactness of an update
 * whose answer was lost needs it (a write is told from another's identical bytes by it), and
 * so does the history (who wrote each revision), so the floor writes it too. The change is the
 * least any writer can do: base64-decode the value, find the top-level "counter" number's
 * digits, write the number plus one in their place, base64-encode (no JSON parser). Requests go
 * out in one write(2) each (headers and a Content-Length body); responses are read with
 * Content-Length or chunked transfer encoding, whichever the gateway sends (etcd_http.h, the
 * client code shared with mirror_floor.c).
 *
 * Modes:
 *   etcd_floor increment HOST:PORT KEY
 *       a worker of bench/harness.py: connects, prints "ready"; for each line N on stdin makes
 *       N exact increments and prints "done RETRIES" (txns whose compare failed, in total);
 *       ends at end of input. Built as etcd_floor_cjson (below), each change parses the value
 *       into cJSON's tree, sets the number there and prints the tree: what a typed update
 *       costs a C client, shown beside ccsync (not a goal's floor).
 *   etcd_floor run HOST:PORT KEY P N
 *       by hand: reads the counter, forks P processes that each make N increments on their own
 *       connection, waits, reads the counter again; prints the rate; status 1 unless the
 *       counter grew by exactly P x N.
 *   etcd_floor watcher HOST:PORT KEY
 *       the raw watch stream as another process's observer: ranges KEY, prints the "sequence"
 *       number of its value (or "none"), then opens POST /v3/watch from the next revision and
 *       prints the "sequence" of each put's decoded value, one line each, flushed at once.
 *       Built as etcd_floor_cjson (-DPARSE_WITH_CJSON, -lcjson), it parses each decoded value
 *       into cJSON's tree and takes the number from the tree, as a watcher that must not act on
 *       a value that is not JSON does (ccsync's gate); otherwise it finds the digits by text.
 *   etcd_floor propagation HOST:PORT KEY COUNT BYTES INTERVAL_US CMD [ARGS...]
 *       starts CMD (an observer printing one line per new value of KEY: `etcd_floor watcher`
 *       or `ccsync watch etcd://HOST:PORT/KEY sequence`) with its standard output on a pipe,
 *       waits for its first line, then COUNT times: puts {"sequence": I, "payload": "x..."}
 *       (about BYTES long) on its own connection, and reads CMD's lines until one holds I.
 *       Prints one "I NANOSECONDS" line per put (-1 when CMD had not printed it 5 s later):
 *       CLOCK_MONOTONIC from just before the put's write(2) to the line's arrival. Then
 *       stops CMD (SIGTERM) and waits for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etcd_http.h"  /* the connection, base64, the fields of the answers */

/* ---- one update ---- */

#ifdef PARSE_WITH_CJSON
#include <cjson/cJSON.h>

/* The counter plus one, as a typed update makes it: the whole value parsed into cJSON's tree,
 * the number changed in the tree, the tree printed again (cJSON's own layout, tabs); a missing
 * key is {"counter": 0}. */
static void increment_counter(const struct buffer *old, struct buffer *out) {
  cJSON *document = old->length ? cJSON_ParseWithLength(old->bytes, old->length) : cJSON_Parse("{\"counter\": 0}");
  if (!cJSON_IsObject(document)) fail("%s", "the value is not a JSON object");
  cJSON *counter = cJSON_GetObjectItemCaseSensitive(document, "counter");
  if (!cJSON_IsNumber(counter)) fail("%s", "\"counter\" is not a number");
  cJSON_SetNumberValue(counter, counter->valuedouble + 1);
  char *printed = cJSON_Print(document);
  if (!printed) fail("%s", "cJSON_Print failed");
  out->length = 0;
  append_text(out, printed);
  append(out, "\n", 1);
  cJSON_free(printed);
  cJSON_Delete(document);
}
#else
/* The counter plus one, its digits edited in place (a missing key is {"counter": 0}). */
static void increment_counter(const struct buffer *old, struct buffer *out) {
  static const char key[] = "\"counter\"";
  static const char empty[] = "{\"counter\": 0}\n";
  const char *text = old->length ? old->bytes : empty;
  size_t length = old->length ? old->length : sizeof empty - 1;
  const char *found = memmem(text, length, key, sizeof key - 1);
  if (!found) fail("%s", "no \"counter\" in the value");
  const char *end = text + length, *digits = found + sizeof key - 1;
  while (digits < end && (*digits == ' ' || *digits == ':' || *digits == '\n' || *digits == '\t' || *digits == '\r')) digits++;
  long long value = 0;
  const char *after = digits;
  while (after < end && *after >= '0' && *after <= '9') value = value * 10 + (*after++ - '0');
  if (after == digits) fail("%s", "\"counter\" is not a number");
  char number[32];
  int number_length = snprintf(number, sizeof number, "%lld", value + 1);
  out->length = 0;
  append(out, text, (size_t)(digits - text));
  append(out, number, (size_t)number_length);
  append(out, after, (size_t)(end - after));
}
#endif

/* The stamp of the next write: {"stamp":"PREFIX N","time":"...","author":{...}}, base64. */
static void next_stamp(struct buffer *stamp64) {
  static char author[512];
  static unsigned long long prefix, counter;
  if (!prefix) {
    char host[256] = "", *user = getenv("USER");
    gethostname(host, sizeof host - 1);
    if (getrandom(&prefix, sizeof prefix, 0) != sizeof prefix || !prefix) prefix = (unsigned long long)time(NULL) * 2654435761u;
    snprintf(author, sizeof author, "\"author\":{\"host\":\"%s\",\"user\":\"%s\",\"pid\":%d,\"program\":\"etcd_floor\"}",
             host, user ? user : "", (int)getpid());
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct tm parts;
  gmtime_r(&now.tv_sec, &parts);
  char stamp[1024];
  int length = snprintf(stamp, sizeof stamp, "{\"stamp\":\"%llx %llu\",\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",%s}",
                        prefix, ++counter, parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
                        parts.tm_min, parts.tm_sec, now.tv_nsec / 1000000, author);
  stamp64->length = 0;
  base64_encode(stamp64, stamp, (size_t)length);
}

static void update(struct client *client) {
  range(client);
  for (;;) {
    increment_counter(&client->state.value, &client->changed);
    client->changed64.length = 0;
    base64_encode(&client->changed64, client->changed.bytes, client->changed.length);
    struct buffer *b = &client->body;
    b->length = 0;
    char compare[160];
    if (client->state.exists) {
      snprintf(compare, sizeof compare, "\",\"target\":\"MOD\",\"result\":\"EQUAL\",\"mod_revision\":\"%lld\"}]",
               client->state.mod_revision);
    } else {
      snprintf(compare, sizeof compare, "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}]");
    }
    append_text(b, "{\"compare\":[{\"key\":\"");
    append_text(b, client->key64.bytes);
    append_text(b, compare);
    append_text(b, ",\"success\":[{\"request_put\":{\"key\":\"");
    append_text(b, client->key64.bytes);
    append_text(b, "\",\"value\":\"");
    append(b, client->changed64.bytes, client->changed64.length);
    next_stamp(&client->stamp64);
    append_text(b, "\"}},{\"request_put\":{\"key\":\"");
    append_text(b, client->stamp_key64.bytes);
    append_text(b, "\",\"value\":\"");
    append(b, client->stamp64.bytes, client->stamp64.length);
    append_text(b, "\"}}],\"failure\":[{\"request_range\":{\"key\":\"");
    append_text(b, client->key64.bytes);
    append_text(b, "\"}}]}");
    post(&client->connection, "/v3/kv/txn", b, &client->response, &client->scratch);
    if (strstr(client->response.bytes, "\"succeeded\":true")) return;
    const char *failure = strstr(client->response.bytes, "\"response_range\"");
    if (!failure) fail("a failed txn without its range: %s", client->response.bytes);
    read_kvs(failure, &client->state);
    client->retries++;
  }
}

/* The counter of the key's value now (0 when missing). */
static long long read_counter(struct client *client) {
  range(client);
  if (!client->state.exists) return 0;
  const char *found = memmem(client->state.value.bytes, client->state.value.length, "\"counter\"", 9);
  if (!found) fail("%s", "no \"counter\" in the value");
  found += 9;
  while (*found == ' ' || *found == ':' || *found == '\n') found++;
  return atoll(found);
}


/* ---- watching ---- */

#ifdef PARSE_WITH_CJSON

/* The "sequence" number of the whole value parsed; -2 when it is not JSON or has none. */
static long long watched_sequence(const struct buffer *value) {
  cJSON *document = cJSON_ParseWithLength(value->bytes, value->length);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(document, "sequence");
  long long sequence = cJSON_IsNumber(item) ? (long long)item->valuedouble : -2;
  cJSON_Delete(document);
  return sequence;
}
#else
static long long watched_sequence(const struct buffer *value) { return sequence_in(value->bytes); }
#endif

static void watcher(const char *endpoint, const char *key) {
  struct client client;
  client_open(&client, endpoint, key);
  range(&client);
  long long revision = 0;
  {
    size_t length;
    const char *header_revision = string_member(client.response.bytes, "revision", &length);
    if (!header_revision) fail("%s", "no header revision in a range answer");
    revision = atoll(header_revision);
  }
  if (client.state.exists) printf("%lld\n", watched_sequence(&client.state.value));
  else printf("none\n");
  fflush(stdout);

  struct connection stream;
  open_connection(&stream, endpoint);
  struct buffer body = {0}, scratch = {0}, pending = {0}, message = {0}, value = {0};
  char request[512];
  snprintf(request, sizeof request, "{\"create_request\":{\"key\":\"%s\",\"start_revision\":\"%lld\"}}",
           client.key64.bytes, revision + 1);
  append_text(&body, request);
  send_post(&stream, "/v3/watch", &body, &scratch);
  long length;
  if (!read_head(&stream, &length)) fail("%s", "the watch answer is not a chunked stream");
  reserve(&pending, 1);
  for (;;) {
    /* The gateway ends each message with a newline; chunks need not match messages. */
    char *newline;
    while (!(newline = memchr(pending.bytes, '\n', pending.length))) {
      if (read_chunk(&stream, &pending) == 0) return;  /* the stream ended */
    }
    size_t message_length = (size_t)(newline - pending.bytes);
    message.length = 0;
    append(&message, pending.bytes, message_length);
    memmove(pending.bytes, newline + 1, pending.length - message_length - 1);
    pending.length -= message_length + 1;
    pending.bytes[pending.length] = 0;
    if (strstr(message.bytes, "\"error\"")) fail("watch error: %s", message.bytes);
    const char *event = message.bytes;
    while ((event = strstr(event, "\"kv\":{"))) {  /* each event (a delete has no value: skipped) */
      size_t value_length;
      const char *next = strstr(event + 6, "\"kv\":{");
      const char *encoded = string_member(event, "value", &value_length);
      if (encoded && (!next || encoded < next)) {
        base64_decode(&value, encoded, value_length);
        printf("%lld\n", watched_sequence(&value));
        fflush(stdout);
      }
      event += 6;
    }
  }
}

/* Reads CMD's lines until one holds `sequence`; returns its arrival time, or -1 after 5 s. */
static int64_t await_sequence(int fd, struct buffer *lines, long long sequence) {
  int64_t deadline = now_ns() + 5000000000LL;
  for (;;) {
    char *newline;
    while ((newline = memchr(lines->bytes, '\n', lines->length))) {
      *newline = 0;
      long long heard = sequence_in(lines->bytes);
      size_t used = (size_t)(newline - lines->bytes) + 1;
      memmove(lines->bytes, newline + 1, lines->length - used);
      lines->length -= used;
      lines->bytes[lines->length] = 0;
      if (heard == sequence) return now_ns();
    }
    int64_t left = deadline - now_ns();
    if (left <= 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, (int)(left / 1000000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    reserve(lines, lines->length + 4097);
    ssize_t got = read(fd, lines->bytes + lines->length, 4096);
    if (got <= 0) fail("%s", "the observer ended");
    lines->length += (size_t)got;
    lines->bytes[lines->length] = 0;
  }
}

static int propagation(const char *endpoint, const char *key, long count, long bytes, long interval, char **command) {
  pid_t child;
  int observer = spawn_on_pipe(command, &child);
  struct buffer lines = {0};
  reserve(&lines, 1);
  lines.bytes[0] = 0;
  /* Ready: its first line (the value it found) printed. */
  {
    int64_t deadline = now_ns() + 30000000000LL;
    while (!memchr(lines.bytes, '\n', lines.length)) {
      struct pollfd p = {observer, POLLIN, 0};
      if (now_ns() > deadline) { kill(child, SIGKILL); fail("%s", "the observer printed nothing in 30 s"); }
      if (poll(&p, 1, 1000) <= 0) continue;
      reserve(&lines, lines.length + 4097);
      ssize_t got = read(observer, lines.bytes + lines.length, 4096);
      if (got <= 0) { waitpid(child, NULL, 0); fail("%s", "the observer ended before its first line"); }
      lines.length += (size_t)got;
      lines.bytes[lines.length] = 0;
    }
    char *newline = memchr(lines.bytes, '\n', lines.length);
    size_t used = (size_t)(newline - lines.bytes) + 1;
    memmove(lines.bytes, newline + 1, lines.length - used);
    lines.length -= used;
    lines.bytes[lines.length] = 0;
  }
  usleep(200000);  /* let it settle into its watch after printing */

  struct client client;
  client_open(&client, endpoint, key);
  int64_t *delays = calloc((size_t)count, sizeof *delays);
  struct buffer document = {0};
  for (long i = 0; i < count; i++) {
    document.length = 0;
    char head[96];
    snprintf(head, sizeof head, "{\n  \"sequence\": %ld,\n  \"payload\": \"", i);
    append_text(&document, head);
    for (long j = (long)strlen(head) + 4; j < bytes; j++) append(&document, "x", 1);
    append_text(&document, "\"\n}\n");
    client.changed64.length = 0;
    base64_encode(&client.changed64, document.bytes, document.length);
    client.body.length = 0;
    append_text(&client.body, "{\"key\":\"");
    append_text(&client.body, client.key64.bytes);
    append_text(&client.body, "\",\"value\":\"");
    append_text(&client.body, client.changed64.bytes);
    append_text(&client.body, "\"}");
    int64_t sent = now_ns();
    send_post(&client.connection, "/v3/kv/put", &client.body, &client.scratch);
    int64_t heard = await_sequence(observer, &lines, i);
    delays[i] = heard < 0 ? -1 : heard - sent;
    long length;  /* the put's own answer, read after the observer's line */
    if (read_head(&client.connection, &length)) {
      client.response.length = 0;
      while (read_chunk(&client.connection, &client.response) > 0) {}
    } else {
      client.response.length = 0;
      read_exactly(&client.connection, &client.response, (size_t)length);
    }
    if (interval > 0) usleep((useconds_t)interval);
  }
  kill(child, SIGTERM);
  int status;
  waitpid(child, &status, 0);
  for (long i = 0; i < count; i++) printf("%ld %lld\n", i, (long long)delays[i]);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: etcd_floor increment HOST:PORT KEY\n"
                  "       etcd_floor run HOST:PORT KEY P N\n"
                  "       etcd_floor watcher HOST:PORT KEY\n"
                  "       etcd_floor propagation HOST:PORT KEY COUNT BYTES INTERVAL_US CMD [ARGS...]\n");
  return 64;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc < 4) return usage();
  const char *endpoint = argv[2], *key = argv[3];
  if (strcmp(argv[1], "increment") == 0 && argc == 4) {
    struct client client;
    client_open(&client, endpoint, key);
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
      long count = atol(line);
      for (long i = 0; i < count; i++) update(&client);
      printf("done %ld\n", client.retries);
      fflush(stdout);
    }
    return 0;
  }
  if (strcmp(argv[1], "run") == 0 && argc == 6) {
    long processes = atol(argv[4]), updates = atol(argv[5]);
    struct client client;
    client_open(&client, endpoint, key);
    long long before = read_counter(&client);
    int64_t start = now_ns();
    for (long p = 0; p < processes; p++) {
      pid_t child = fork();
      if (child < 0) fail("fork: %s", strerror(errno));
      if (child == 0) {
        struct client own;
        client_open(&own, endpoint, key);
        for (long i = 0; i < updates; i++) update(&own);
        _exit(0);
      }
    }
    int failed = 0, status;
    while (wait(&status) > 0) if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    double seconds = (double)(now_ns() - start) / 1e9;
    long long after = read_counter(&client);
    printf("processes: %ld\nupdates: %ld\nseconds: %.3f\nupdates per second: %.0f\nlost updates: %lld\n",
           processes, processes * updates, seconds, (double)(processes * updates) / seconds,
           processes * updates - (after - before));
    return failed || after - before != processes * updates;
  }
  if (strcmp(argv[1], "watcher") == 0 && argc == 4) {
    watcher(endpoint, key);
    return 0;
  }
  if (strcmp(argv[1], "propagation") == 0 && argc >= 8) {
    return propagation(endpoint, key, atol(argv[4]), atol(argv[5]), atol(argv[6]), argv + 7);
  }
  return usage();
}
