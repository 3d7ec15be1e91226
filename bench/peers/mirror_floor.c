/*
 * mirror_floor: the C side of the mirror benchmark (bench/lib/mirror.py): the floor of
 * `ccsync mirror`'s file-to-file path across two machines, a paced writer, and a driver that
 * times one put to many watching processes. It speaks etcd's v3 JSON gateway over HTTP/1.1
 * with etcd_http.h, the client code etcd_floor.c uses.
 *
 * Modes:
 *   mirror_floor chain FILE_A FILE_B PUT_HOST:PORT WATCH_HOST:PORT KEY
 *       the raw parts of the mirror's path from machine A's file to machine B's, in one
 *       process, each machine's part on a thread of its own (as two hosts' work overlaps: B
 *       writes its file while A records its put's answer): an inotify watch on FILE_A's directory; on IN_MOVED_TO or IN_CLOSE_WRITE
 *       naming FILE_A it reads the file whole and sends it as one put of KEY (no range, no
 *       compare) on a kept-alive connection to PUT_HOST:PORT; one watch stream of KEY on
 *       WATCH_HOST:PORT (its own connection, opened from the key's revision + 1 and waited on
 *       until etcd says it is created) gives each put's value, which is written to FILE_B as
 *       ccsync writes a file: under an exclusive flock of FILE_B.lock, a new temp file in
 *       FILE_B's directory, write, fsync, rename over FILE_B, unlock, fsync of the directory.
 *       Each side records its sync durably before its write and again after it, as the mirror's
 *       crash safety needs (`.NAME.floor-state` beside each file, written the same atomic durable
 *       way; its bytes are the document's): A before the put and once the put is answered, B
 *       around its write of FILE_B. A restarted mirror finds from that record which of each
 *       side's differences were its own writes (docs/SEMANTICS.md, "Mirror"), so ccsync makes
 *       the same two writes a sync and the floor does too.
 *       The put's answer is read when it arrives (poll), off the path to FILE_B; a change of
 *       FILE_A while a put is unanswered is put once that answer is read. Prints "ready" once
 *       the watch is created; at end of standard input prints "puts P events E writes W" and
 *       exits.
 *   mirror_floor writer FILE COUNT BYTES PERIOD_US
 *       prints "ready", waits for a line on standard input, then COUNT times, every PERIOD_US
 *       on absolute deadlines (a late write does not cause a burst of catching up), replaces
 *       FILE with {"sequence": N, "sentAt": T, "payload": "x..."} (about BYTES long) as
 *       ccsync writes a file (flock FILE.lock, temp, write, fsync, rename, unlock, fsync of
 *       the directory). Then prints "done COUNT SECONDS" and one "SEQUENCE RENAME_NS" line per
 *       write, RENAME_NS being CLOCK_MONOTONIC just before rename(2).
 *   mirror_floor fanout PUT_HOST:PORT KEY COUNT BYTES INTERVAL_US ENDPOINTS N CMD [ARGS...]
 *       starts N observers, each CMD ARGS with "{endpoints}" in an argument replaced by the
 *       comma-separated ENDPOINTS rotated by the observer's number (observer i talks to
 *       endpoint i mod 3 first) and "{endpoint}" by that first endpoint alone; each with its
 *       standard output on a pipe of its own. Once each has printed its first line (the value
 *       it found) and has printed a warm-up put's value (so each watch is in place), COUNT
 *       times: puts {"sequence": I, "payload": "x..."} (about BYTES long) on
 *       its own kept-alive connection to PUT_HOST:PORT, and reads every observer's lines until
 *       each has printed I, or 5 s have passed; then reads the put's answer and sleeps
 *       INTERVAL_US, so that puts never queue. Prints one "I OBSERVER NANOSECONDS" line per put
 *       and observer (-1: not printed within 5 s), CLOCK_MONOTONIC from just before the put's
 *       write(2) to the line's arrival, then stops the observers (SIGTERM, SIGKILL after 5 s).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "etcd_http.h"

/* ---- files ---- */

static void split_path(const char *path, char *directory, size_t size, const char **name) {
  const char *slash = strrchr(path, '/');
  if (slash) snprintf(directory, size, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  else snprintf(directory, size, ".");
  *name = slash ? slash + 1 : path;
}

/* Reads FILE whole into `out`; 0 when it cannot be opened (replaced meanwhile: a new event
 * follows). */
static int read_file(const char *path, struct buffer *out) {
  int file = open(path, O_RDONLY | O_CLOEXEC);
  if (file < 0) return 0;
  out->length = 0;
  for (;;) {
    reserve(out, out->length + 65536);
    ssize_t got = read(file, out->bytes + out->length, 65536);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read: %s", strerror(errno));
    if (got == 0) break;
    out->length += (size_t)got;
  }
  out->bytes[out->length] = 0;
  close(file);
  return 1;
}

/* Replaces PATH with BYTES as ccsync writes a file; returns CLOCK_MONOTONIC just before the
 * rename. */
static int64_t replace_file(const char *path, const char *bytes, size_t length) {
  char directory[PATH_MAX], lock_path[PATH_MAX + 8], temporary[PATH_MAX + 32];
  const char *name;
  split_path(path, directory, sizeof directory, &name);
  snprintf(lock_path, sizeof lock_path, "%s.lock", path);
  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) fail("open lock: %s", strerror(errno));
  while (flock(lock, LOCK_EX) != 0) if (errno != EINTR) fail("flock: %s", strerror(errno));
  int file = -1;
  for (int attempt = 0; attempt < 100 && file < 0; attempt++) {
    snprintf(temporary, sizeof temporary, "%s/.%s.tmp-%08lx", directory, name, (unsigned long)random());
    file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (file < 0 && errno != EEXIST) fail("create: %s", strerror(errno));
  }
  if (file < 0) fail("%s", "no temp file name free");
  write_all(file, bytes, length);
  if (fsync(file) != 0) fail("fsync: %s", strerror(errno));
  int64_t renamed_at = now_ns();
  if (rename(temporary, path) != 0) fail("rename: %s", strerror(errno));
  close(file);
  flock(lock, LOCK_UN);
  close(lock);
  int directory_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd < 0 || fsync(directory_fd) != 0) fail("fsync directory: %s", strerror(errno));
  close(directory_fd);
  return renamed_at;
}

/* ---- chain ---- */

/* The sync record beside PATH: DIR/.NAME.floor-state. */
static void state_path(const char *path, char *out, size_t size) {
  char directory[PATH_MAX];
  const char *name;
  split_path(path, directory, sizeof directory, &name);
  snprintf(out, size, "%s/.%s.floor-state", directory, name);
}

/* Machine B's part: each watch event's value, written to FILE_B between its two records. */
struct machine_b {
  struct watch_stream stream;
  const char *file;
  char state[PATH_MAX + 16];
  long events, writes;
};

static void *machine_b_run(void *argument) {
  struct machine_b *b = argument;
  struct buffer value = {0};
  for (;;) {
    if (!watch_next(&b->stream)) fail("%s", "the watch stream ended");
    const char *event = b->stream.message.bytes;
    while (watch_event_value(&event, &value)) {
      b->events++;
      replace_file(b->state, value.bytes, value.length);
      replace_file(b->file, value.bytes, value.length);
      replace_file(b->state, value.bytes, value.length);
      b->writes++;
    }
  }
  return NULL;
}

static int chain(const char *file_a, const char *file_b, const char *put_endpoint, const char *watch_endpoint,
                 const char *key) {
  char state_a[PATH_MAX + 16];
  static struct machine_b b;
  state_path(file_a, state_a, sizeof state_a);
  state_path(file_b, b.state, sizeof b.state);
  b.file = file_b;
  struct client put;
  client_open(&put, put_endpoint, key);
  range(&put);
  long long revision = header_revision(put.response.bytes);
  if (revision <= 0) fail("%s", "no header revision in a range answer");
  watch_open(&b.stream, watch_endpoint, put.key64.bytes, revision + 1);
  pthread_t machine_b_thread;
  if (pthread_create(&machine_b_thread, NULL, machine_b_run, &b) != 0) fail("%s", "pthread_create");

  char directory[PATH_MAX];
  const char *name;
  split_path(file_a, directory, sizeof directory, &name);
  int inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify < 0 || inotify_add_watch(inotify, directory, IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
    fail("inotify: %s", strerror(errno));
  printf("ready\n");
  fflush(stdout);

  struct buffer contents = {0}, answer = {0};
  long puts = 0;
  int put_pending = 0, changed_meanwhile = 0;
  char inotify_events[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    struct pollfd fds[3] = {{.fd = 0, .events = POLLIN},
                            {.fd = inotify, .events = POLLIN},
                            {.fd = put.connection.fd, .events = POLLIN}};
    if (poll(fds, put_pending ? 3 : 2, -1) < 0) {
      if (errno == EINTR) continue;
      fail("poll: %s", strerror(errno));
    }
    if (fds[0].revents) {
      char line[256];
      if (read(0, line, sizeof line) <= 0) break;
    }
    int send = 0;
    if (fds[1].revents & POLLIN) {
      ssize_t length = read(inotify, inotify_events, sizeof inotify_events);
      for (char *p = inotify_events; length > 0 && p < inotify_events + length;) {
        struct inotify_event *event = (struct inotify_event *)p;
        if (event->len && strcmp(event->name, name) == 0) send = 1;
        p += sizeof *event + event->len;
      }
    }
    if (put_pending && (fds[2].revents & POLLIN)) {
      read_body(&put.connection, &answer);
      replace_file(state_a, contents.bytes, contents.length);
      put_pending = 0;
      if (changed_meanwhile) send = 1;
      changed_meanwhile = 0;
    }
    if (send && put_pending) changed_meanwhile = 1;
    else if (send && read_file(file_a, &contents)) {
      replace_file(state_a, contents.bytes, contents.length);
      send_put(&put, contents.bytes, contents.length);
      put_pending = 1;
      puts++;
    }
  }
  /* Counted by B's thread, still running: a figure for the log, not for a measurement. */
  printf("puts %ld events %ld writes %ld\n", puts, b.events, b.writes);
  return 0;
}

/* ---- writer ---- */

static void timed_document(struct buffer *out, long sequence, long bytes) {
  char head[128];
  int head_length = snprintf(head, sizeof head, "{\n  \"sequence\" : %ld,\n  \"sentAt\" : %lld,\n  \"payload\" : \"",
                             sequence, (long long)now_ns());
  out->length = 0;
  append(out, head, (size_t)head_length);
  for (long j = head_length + 4; j < bytes; j++) append(out, "x", 1);
  append_text(out, "\"\n}\n");
}

static int writer(const char *path, long count, long bytes, long period_us) {
  printf("ready\n");
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 1;
  int64_t *renamed = calloc((size_t)count, sizeof *renamed);
  struct buffer document = {0};
  int64_t start = now_ns(), next = start;
  for (long i = 0; i < count; i++) {
    timed_document(&document, i, bytes);
    renamed[i] = replace_file(path, document.bytes, document.length);
    next += (int64_t)period_us * 1000;
    int64_t now = now_ns();
    if (next < now) next = now; /* late: no catching up in a burst */
    struct timespec until = {next / 1000000000LL, next % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
  }
  printf("done %ld %.6f\n", count, (double)(now_ns() - start) / 1e9);
  for (long i = 0; i < count; i++) printf("%ld %lld\n", i, (long long)renamed[i]);
  return 0;
}

/* ---- fanout ---- */

struct observer {
  pid_t pid;
  int fd;
  struct buffer lines;
  int ready;
};

/* Reads what is there from the observer's pipe; 0 at end of stream. */
static int observer_read(struct observer *o) {
  reserve(&o->lines, o->lines.length + 4097);
  ssize_t got = read(o->fd, o->lines.bytes + o->lines.length, 4096);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (got <= 0) return 0;
  o->lines.length += (size_t)got;
  o->lines.bytes[o->lines.length] = 0;
  return 1;
}

/* Takes the observer's complete lines; returns 1 when one held `sequence` (-3: any line). */
static int observer_heard(struct observer *o, long long sequence) {
  int heard = 0;
  char *newline;
  while ((newline = memchr(o->lines.bytes, '\n', o->lines.length))) {
    *newline = 0;
    if (sequence == -3 || sequence_in(o->lines.bytes) == sequence) heard = 1;
    size_t used = (size_t)(newline - o->lines.bytes) + 1;
    memmove(o->lines.bytes, newline + 1, o->lines.length - used);
    o->lines.length -= used;
    o->lines.bytes[o->lines.length] = 0;
  }
  return heard;
}

/* `argument` with {endpoints} and {endpoint} replaced for observer `index`. */
static char *substitute(const char *argument, char **endpoints, int endpoint_count, int index) {
  struct buffer list = {0}, first = {0}, out = {0};
  reserve(&list, 1);
  reserve(&first, 1);
  reserve(&out, 1);
  for (int j = 0; j < endpoint_count; j++) {
    if (j) append_text(&list, ",");
    append_text(&list, endpoints[(index + j) % endpoint_count]);
  }
  append_text(&first, endpoints[index % endpoint_count]);
  const char *p = argument;
  while (*p) {
    if (strncmp(p, "{endpoints}", 11) == 0) { append_text(&out, list.bytes); p += 11; }
    else if (strncmp(p, "{endpoint}", 10) == 0) { append_text(&out, first.bytes); p += 10; }
    else { append(&out, p, 1); p++; }
  }
  free(list.bytes);
  free(first.bytes);
  return out.bytes;
}

static void stop_observers(struct observer *observers, int count) {
  for (int i = 0; i < count; i++) if (observers[i].pid > 0) kill(observers[i].pid, SIGTERM);
  int64_t deadline = now_ns() + 5000000000LL;
  int left = count;
  while (left > 0) {
    left = 0;
    for (int i = 0; i < count; i++) {
      if (observers[i].pid <= 0) continue;
      if (waitpid(observers[i].pid, NULL, WNOHANG) == observers[i].pid) observers[i].pid = 0;
      else left++;
    }
    if (left && now_ns() > deadline) {
      for (int i = 0; i < count; i++) if (observers[i].pid > 0) kill(observers[i].pid, SIGKILL);
      for (int i = 0; i < count; i++) if (observers[i].pid > 0) waitpid(observers[i].pid, NULL, 0);
      return;
    }
    if (left) usleep(10000);
  }
}

/* One put of {"sequence": SEQUENCE, "payload": "x..."} and the observers' lines until each has
 * printed SEQUENCE or TIMEOUT_NS has passed; then the put's answer is read. With `delays`, the
 * nanoseconds from just before the put's write(2) to each observer's line (-1: not heard). */
#define WARM_UP_SEQUENCE -5 /* not -1 (the seed), -2 or -3 (sequence_in's and observer_heard's marks) */
struct fanout_put {
  struct client *client;
  struct observer *observers;
  int n;
  long bytes;
  struct pollfd *fds;
  int *which, *heard;
  struct buffer document;
};

static void fanout_put_and_wait(struct fanout_put *p, long sequence, int64_t timeout_ns, int64_t *delays) {
  int n = p->n;
  p->document.length = 0;
  char head[96];
  snprintf(head, sizeof head, "{\n  \"sequence\": %ld,\n  \"payload\": \"", sequence);
  append_text(&p->document, head);
  for (long j = (long)strlen(head) + 4; j < p->bytes; j++) append(&p->document, "x", 1);
  append_text(&p->document, "\"\n}\n");
  memset(p->heard, 0, (size_t)n * sizeof *p->heard);
  if (delays) for (int o = 0; o < n; o++) delays[o] = -1;
  int64_t sent = now_ns();
  send_put(p->client, p->document.bytes, p->document.length);
  int64_t deadline = sent + timeout_ns;
  int waiting = n;
  while (waiting > 0 && now_ns() < deadline) {
    int polled = 0;
    for (int o = 0; o < n; o++) {
      if (p->heard[o]) continue;
      p->fds[polled] = (struct pollfd){.fd = p->observers[o].fd, .events = POLLIN};
      p->which[polled++] = o;
    }
    int ready = poll(p->fds, (nfds_t)polled, (int)((deadline - now_ns()) / 1000000) + 1);
    if (ready <= 0) continue;
    for (int k = 0; k < polled; k++) {
      if (!p->fds[k].revents) continue;
      struct observer *o = &p->observers[p->which[k]];
      if (!observer_read(o)) {
        stop_observers(p->observers, n);
        fail("%s", "an observer ended");
      }
      if (observer_heard(o, sequence)) {
        if (delays) delays[p->which[k]] = now_ns() - sent;
        p->heard[p->which[k]] = 1;
        waiting--;
      }
    }
  }
  read_body(&p->client->connection, &p->client->response);
}

static int fanout(const char *put_endpoint, const char *key, long count, long bytes, long interval, char *endpoint_list,
                  int n, char **command) {
  char *endpoints[16];
  int endpoint_count = 0;
  for (char *part = strtok(endpoint_list, ","); part && endpoint_count < 16; part = strtok(NULL, ","))
    endpoints[endpoint_count++] = part;
  if (endpoint_count == 0) fail("%s", "no endpoints");
  int arguments = 0;
  while (command[arguments]) arguments++;
  struct observer *observers = calloc((size_t)n, sizeof *observers);
  for (int i = 0; i < n; i++) {
    char **argv = calloc((size_t)arguments + 1, sizeof *argv);
    for (int j = 0; j < arguments; j++) argv[j] = substitute(command[j], endpoints, endpoint_count, i);
    pid_t child;
    int fd = spawn_on_pipe(argv, &child);
    observers[i] = (struct observer){.pid = child, .fd = fd};
    reserve(&observers[i].lines, 1);
    observers[i].lines.bytes[0] = 0;
    for (int j = 0; j < arguments; j++) free(argv[j]);
    free(argv);
  }
  struct pollfd *fds = calloc((size_t)n, sizeof *fds);
  int *which = calloc((size_t)n, sizeof *which);
  /* Ready: each observer's first line (the value it found). */
  {
    int64_t deadline = now_ns() + (60LL + n) * 1000000000LL;
    int waiting = n;
    while (waiting > 0) {
      if (now_ns() > deadline) {
        stop_observers(observers, n);
        fail("%s", "an observer printed nothing in time");
      }
      int polled = 0;
      for (int i = 0; i < n; i++) {
        if (observers[i].ready) continue;
        fds[polled] = (struct pollfd){.fd = observers[i].fd, .events = POLLIN};
        which[polled++] = i;
      }
      if (poll(fds, (nfds_t)polled, 1000) <= 0) continue;
      for (int k = 0; k < polled; k++) {
        if (!fds[k].revents) continue;
        struct observer *o = &observers[which[k]];
        if (!observer_read(o)) {
          stop_observers(observers, n);
          fail("%s", "an observer ended before its first line");
        }
        if (observer_heard(o, -3)) { o->ready = 1; waiting--; }
      }
    }
  }
  struct client client;
  client_open(&client, put_endpoint, key);
  int64_t *delays = calloc((size_t)count * (size_t)n, sizeof *delays);
  struct fanout_put put = {.client = &client, .observers = observers, .n = n, .bytes = bytes,
                           .fds = fds, .which = which, .heard = calloc((size_t)n, sizeof(int))};
  /* Warm-up: one put every observer must print (30 s at most) before the timed ones, so that
   * each has its watch in place and no timed put pays for a stream being set up. */
  fanout_put_and_wait(&put, WARM_UP_SEQUENCE, 30000000000LL, NULL);
  for (int o = 0; o < n; o++) {
    if (!put.heard[o]) {
      stop_observers(observers, n);
      fail("%s", "an observer did not print the warm-up put within 30 s");
    }
  }
  for (long i = 0; i < count; i++) {
    fanout_put_and_wait(&put, i, 5000000000LL, delays + i * n);
    if (interval > 0) usleep((useconds_t)interval);
  }
  stop_observers(observers, n);
  for (long i = 0; i < count; i++)
    for (int o = 0; o < n; o++) printf("%ld %d %lld\n", i, o, (long long)delays[i * n + o]);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: mirror_floor chain FILE_A FILE_B PUT_HOST:PORT WATCH_HOST:PORT KEY\n"
                  "       mirror_floor writer FILE COUNT BYTES PERIOD_US\n"
                  "       mirror_floor fanout PUT_HOST:PORT KEY COUNT BYTES INTERVAL_US ENDPOINTS N CMD [ARGS...]\n");
  return 64;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  srandom((unsigned)(now_ns() ^ getpid()));
  if (argc == 7 && strcmp(argv[1], "chain") == 0) return chain(argv[2], argv[3], argv[4], argv[5], argv[6]);
  if (argc == 6 && strcmp(argv[1], "writer") == 0) return writer(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]));
  if (argc >= 10 && strcmp(argv[1], "fanout") == 0)
    return fanout(argv[2], argv[3], atol(argv[4]), atol(argv[5]), atol(argv[6]), argv[7], atoi(argv[8]), argv + 9);
  return usage();
}
