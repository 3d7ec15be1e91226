/*
 * inotify_floor FILE: the propagation floor, the least a reader can do to learn of a new
 * version: one inotify watch on FILE's directory; on IN_MOVED_TO (or IN_CLOSE_WRITE) naming
 * FILE it opens the file, reads it whole, takes the "sequence" and "sentAt" numbers from it,
 * and records CLOCK_MONOTONIC. No decoding into a type, no identity comparison, no threads.
 *
 * Two builds of this file, differing only in how the numbers are taken (read_version):
 *   inotify_floor        finds them in the text with memmem, no JSON parser: the least work;
 *   inotify_floor_cjson  (-DPARSE_WITH_CJSON, -lcjson) parses the whole document into cJSON's
 *                        tree, reads the numbers from the tree, stamps the time and frees the
 *                        tree: the "rename-to-parsed" work a reader of JSON does.
 *                        `inotify_floor_cjson --version` prints cJSON's version.
 *
 * Prints "ready" once the watch is armed; when standard input is closed prints one
 * "SEQUENCE RECEIVED_NS" line per version read, then "end" and, on standard error, nothing.
 * Also the CPU-cost floor: events for other names in the directory cost it one read(2) and a
 * name comparison each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#ifdef PARSE_WITH_CJSON
#include <cjson/cJSON.h>

/* Parses the whole document; takes the numbers from the tree; *at is the moment they are
 * held, before the tree is freed. 0 if the text is not an object with both numbers. */
static int read_version(const char *text, size_t length, long long *sequence, long long *sent_at, int64_t *at) {
  cJSON *document = cJSON_ParseWithLength(text, length);
  const cJSON *sequence_item = cJSON_GetObjectItemCaseSensitive(document, "sequence");
  const cJSON *sent_at_item = cJSON_GetObjectItemCaseSensitive(document, "sentAt");
  int found = cJSON_IsNumber(sequence_item) && cJSON_IsNumber(sent_at_item);
  if (found) {
    *sequence = (long long)sequence_item->valuedouble;
    *sent_at = (long long)sent_at_item->valuedouble;
  }
  *at = now_ns();
  cJSON_Delete(document);
  return found;
}
#else
static long long number_after(const char *text, size_t length, const char *key) {
  const char *found = memmem(text, length, key, strlen(key));
  if (!found) return -1;
  const char *end = text + length, *p = found + strlen(key);
  while (p < end && (*p == ' ' || *p == ':' || *p == '"')) p++;
  long long value = 0;
  while (p < end && *p >= '0' && *p <= '9') value = value * 10 + (*p++ - '0');
  return value;
}

/* Finds the two numbers in the text; no JSON parser. */
static int read_version(const char *text, size_t length, long long *sequence, long long *sent_at, int64_t *at) {
  *sequence = number_after(text, length, "\"sequence\"");
  *sent_at = number_after(text, length, "\"sentAt\"");
  *at = now_ns();
  return *sequence >= 0;
}
#endif

int main(int argc, char **argv) {
#ifdef PARSE_WITH_CJSON
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("cJSON %s\n", cJSON_Version());
    return 0;
  }
#endif
  if (argc != 2) {
    fprintf(stderr, "usage: inotify_floor FILE\n");
    return 64;
  }
  const char *path = argv[1];
  char directory[PATH_MAX];
  const char *slash = strrchr(path, '/');
  snprintf(directory, sizeof directory, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  const char *name = slash ? slash + 1 : path;

  int inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify < 0 || inotify_add_watch(inotify, directory, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
    perror("inotify_floor: inotify");
    return 1;
  }
  size_t capacity = 1 << 16, used = 0, samples = 0, sample_capacity = 100000;
  char *contents = malloc(capacity);
  long long *sequences = malloc(sample_capacity * sizeof *sequences);
  int64_t *times = malloc(sample_capacity * sizeof *times);
  long long checksum = 0;
  printf("ready\n");
  fflush(stdout);

  char events[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = inotify, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      perror("inotify_floor: poll");
      return 1;
    }
    if (fds[0].revents) {
      char line[256];
      if (read(0, line, sizeof line) <= 0) break; /* stdin closed: report */
    }
    if (!(fds[1].revents & POLLIN)) continue;
    ssize_t length = read(inotify, events, sizeof events);
    int matched = 0;
    for (char *p = events; length > 0 && p < events + length;) {
      struct inotify_event *event = (struct inotify_event *)p;
      if (event->len && strcmp(event->name, name) == 0) matched = 1;
      p += sizeof *event + event->len;
    }
    if (!matched) continue;
    int file = open(path, O_RDONLY | O_CLOEXEC);
    if (file < 0) continue;
    used = 0;
    for (;;) {
      if (used == capacity) contents = realloc(contents, capacity *= 2);
      ssize_t got = read(file, contents + used, capacity - used);
      if (got <= 0) break;
      used += (size_t)got;
    }
    close(file);
    long long sequence, sent_at;
    int64_t now;
    if (!read_version(contents, used, &sequence, &sent_at, &now)) continue;
    checksum += sent_at;
    if (samples < sample_capacity && (samples == 0 || sequences[samples - 1] != sequence)) {
      sequences[samples] = sequence;
      times[samples++] = now;
    }
  }
  for (size_t i = 0; i < samples; i++) printf("%lld %lld\n", sequences[i], (long long)times[i]);
  printf("end\n");
  return checksum == 42 ? 2 : 0; /* keeps the parse from being optimised away */
}
