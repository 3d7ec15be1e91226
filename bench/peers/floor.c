/*
 * floor: ccsync's write protocol in plain C, the floor the library's numbers are held to.
 *
 * One locked read-modify-write, exactly as docs/ARCHITECTURE.md, "Writing", has it: flock(2)
 * LOCK_EX on the sidecar NAME.lock (opened O_NOFOLLOW, never truncated); open and read the
 * whole data file; change it; create .NAME.tmp-XXXXXXXX beside it (O_CREAT|O_EXCL|O_NOFOLLOW,
 * 0600); give it the target's mode; write every byte; fsync; rename over the target; unlock;
 * close the replaced version (kept open since the read: its last close frees it); fsync the
 * directory.
 * Relaxed mode skips both fsyncs. As in ccsync, the lock covers the read, the temp file and
 * the rename; closing the replaced file and the directory's fsync come after the unlock, so
 * the next writer does not wait for them (the call still returns only once they are done).
 *
 * It makes every system call ccsync's protocol makes, for the same reasons (the library's
 * safeguards; strace a `ccsync set` to compare): lstat of the data file's name (ccsync follows
 * a symlink itself) and fstat of the lock file before the flock; after it, lstat of the lock
 * file's name (the lock is void if that file was replaced); fstat of the data file again
 * before writing (the metadata to inherit, as it is then); faccessat(W_OK) (a read-only file
 * is refused, not replaced); the temp file's own flock (the mark of a live writer, for the
 * leftover cleaner) and fstat (owner and group to inherit); flistxattr of the original
 * (attributes and ACLs to inherit); fstat of the new version after the rename (its identity);
 * and, on the first write and then every 10 s, a listing of the directory for leftover temp
 * files. With --bare it makes only the protocol's bare steps above (the floor before those
 * safeguards), a reference for what they cost.
 * No JSON parser: the change edits the text of the top-level "counter" number in place, which
 * is the least any writer can do.
 *
 * Modes (each prints "ready" and waits for a line on stdin before it starts, prints "done" at
 * the end):
 *   floor increment FILE [--relaxed] [--bare] [--history] [--keep N]
 *                                                for each line N on stdin, N counter
 *                                                increments, then "done"; ends at end of input;
 *                                                --history keeps the replaced versions as
 *                                                ccsync does by default (floor_history.h);
 *                                                --keep N writes N to the history's `keep`
 *                                                file first, as `ccsync-bench bench-worker
 *                                                --keep N` does (0: the history is off, and
 *                                                each write reads `keep` to learn so)
 *   floor timed-writer FILE COUNT BYTES INTERVAL_US
 *       COUNT saves of {"sequence": N, "sentAt": T, "payload": "x..."} (about BYTES long),
 *       durable, INTERVAL_US apart; after "done" prints one "SEQUENCE RENAME_NS" line per save,
 *       RENAME_NS being CLOCK_MONOTONIC just before rename(2): the moment the version appears.
 *   floor churn FILE SECONDS                     relaxed increments in a tight loop for SECONDS;
 *                                                prints "done COUNT"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "floor: %s '%s': %s\n", what, path, strerror(errno));
  exit(1);
}

struct target {
  char path[PATH_MAX], lock[PATH_MAX + 8], directory[PATH_MAX], temporary_prefix[PATH_MAX + 16];
};

static void target_init(struct target *t, const char *path) {
  snprintf(t->path, sizeof t->path, "%s", path);
  snprintf(t->lock, sizeof t->lock, "%s.lock", path);
  const char *slash = strrchr(path, '/');
  if (slash) {
    snprintf(t->directory, sizeof t->directory, "%.*s", (int)(slash - path), path);
    if (t->directory[0] == 0) strcpy(t->directory, "/");
  } else {
    strcpy(t->directory, ".");
  }
  const char *name = slash ? slash + 1 : path;
  snprintf(t->temporary_prefix, sizeof t->temporary_prefix, "%s/.%s.tmp-", t->directory, name);
}

struct buffer { char *bytes; size_t length, capacity; };

/* --bare: only the protocol's bare steps, without ccsync's safeguards. */
static int bare = 0;

/* ccsync lists the directory for leftover temp files on a process's first write of a file and
 * then every 10 s; the floor does the same listing (it finds nothing to remove here). */
static void sweep_leftovers_if_due(const struct target *t) {
  static int64_t next_sweep = 0;
  int64_t now = now_ns();
  if (now < next_sweep) return;
  next_sweep = now + 10000000000LL;
  int directory = open(t->directory, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (directory < 0) die("open", t->directory);
  struct stat status;
  if (fstat(directory, &status) != 0) die("fstat", t->directory);
  char entries[32768];
  while (syscall(SYS_getdents64, directory, entries, sizeof entries) > 0) {}
  close(directory);
}

static void reserve(struct buffer *b, size_t capacity) {
  if (b->capacity >= capacity) return;
  b->bytes = realloc(b->bytes, capacity);
  if (!b->bytes) { perror("floor: realloc"); exit(1); }
  b->capacity = capacity;
}

static void write_all(int fd, const char *bytes, size_t length, const char *path) {
  while (length > 0) {
    ssize_t written = write(fd, bytes, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      die("write", path);
    }
    bytes += written;
    length -= (size_t)written;
  }
}

/* Builds the new contents from the old (old may be empty when the file is missing). */
typedef void (*change_fn)(const struct buffer *old, struct buffer *new_contents, void *context);

#include "floor_history.h"

/* --history: keep the replaced versions as ccsync does by default (floor_history.h). */
static struct history *history = NULL;

static void synchronize_directory(void *directory_path) {
  int directory = open(directory_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) die("open", directory_path);
  if (fsync(directory) != 0) die("fsync", directory_path);
  close(directory);
}

/* One locked read-modify-write. Returns CLOCK_MONOTONIC just before rename(2). */
static int64_t locked_replace(const struct target *t, int durable, change_fn change, void *context,
                              struct buffer *old, struct buffer *new_contents) {
  struct stat status;
  if (!bare && lstat(t->path, &status) != 0 && errno != ENOENT) die("lstat", t->path);
  int lock = open(t->lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (lock < 0) die("open", t->lock);
  struct stat lock_status;
  if (!bare && fstat(lock, &lock_status) != 0) die("fstat", t->lock);
  while (flock(lock, LOCK_EX) != 0) if (errno != EINTR) die("flock", t->lock);
  if (!bare) {
    struct stat at_name;
    if (lstat(t->lock, &at_name) != 0 || at_name.st_ino != lock_status.st_ino) die("lock file replaced", t->lock);
  }

  old->length = 0;
  mode_t mode = 0644;
  int data = open(t->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (data >= 0) {
    if (fstat(data, &status) != 0) die("fstat", t->path);
    mode = status.st_mode & 07777;
    reserve(old, (size_t)status.st_size + 4096);
    for (;;) {
      if (old->length == old->capacity) reserve(old, old->capacity * 2);
      ssize_t got = read(data, old->bytes + old->length, old->capacity - old->length);
      if (got < 0) { if (errno == EINTR) continue; die("read", t->path); }
      if (got == 0) break;
      old->length += (size_t)got;
      if (!bare && old->length == (size_t)status.st_size) break;  /* as ccsync: one read of the size fstat gave */
    }
  } else if (errno != ENOENT) {
    die("open", t->path);
  }
  if (history && data >= 0) history_keep_replaced(history, t->path, &status);

  change(old, new_contents, context);
  if (!bare) {
    if (data >= 0) {  /* the metadata to inherit, as it is now */
      if (fstat(data, &status) != 0) die("fstat", t->path);
      mode = status.st_mode & 07777;
    }
    if (data >= 0 && faccessat(AT_FDCWD, t->path, W_OK, AT_EACCESS) != 0) die("faccessat", t->path);
    sweep_leftovers_if_due(t);
  }

  char temporary[PATH_MAX + 32];
  int file = -1;
  for (int attempt = 0; attempt < 100 && file < 0; attempt++) {
    snprintf(temporary, sizeof temporary, "%s%08lx", t->temporary_prefix, (unsigned long)random());
    file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (file < 0 && errno != EEXIST) die("create", temporary);
  }
  if (file < 0) die("create", temporary);
  if (!bare) {
    if (flock(file, LOCK_EX | LOCK_NB) != 0) die("flock", temporary);
    struct stat created;
    if (fstat(file, &created) != 0) die("fstat", temporary);
    if (data >= 0 && (created.st_uid != status.st_uid || created.st_gid != status.st_gid)
        && fchown(file, status.st_uid, status.st_gid) != 0) die("fchown", temporary);
  }
  if (fchmod(file, mode) != 0) die("fchmod", temporary);
  if (!bare && data >= 0 && flistxattr(data, NULL, 0) < 0 && errno != ENOTSUP) die("flistxattr", t->path);
  write_all(file, new_contents->bytes, new_contents->length, temporary);
  if (durable && fsync(file) != 0) die("fsync", temporary);
  int64_t renamed_at = now_ns();
  if (rename(temporary, t->path) != 0) die("rename", temporary);
  if (!bare) {
    struct stat renamed;
    if (fstat(file, &renamed) != 0) die("fstat", temporary);
    if (history && data >= 0) history_record(history, &renamed);
  }
  close(file);
  flock(lock, LOCK_UN);
  close(lock);
  if (data >= 0) close(data);
  if (history && data >= 0) {
    history_remove_old(history, durable ? synchronize_directory : NULL, (void *)t->directory);
  } else if (durable) {
    synchronize_directory((void *)t->directory);
  }
  return renamed_at;
}

/* Adds one to the top-level "counter" number, editing its text in place. */
static void increment_counter(const struct buffer *old, struct buffer *new_contents, void *context) {
  (void)context;
  static const char key[] = "\"counter\"";
  const char *found = old->length ? memmem(old->bytes, old->length, key, sizeof key - 1) : NULL;
  if (!found) { fprintf(stderr, "floor: no \"counter\" in the file\n"); exit(1); }
  const char *end = old->bytes + old->length;
  const char *digits = found + sizeof key - 1;
  while (digits < end && (*digits == ' ' || *digits == ':' || *digits == '\n')) digits++;
  long long value = 0;
  const char *after = digits;
  while (after < end && *after >= '0' && *after <= '9') value = value * 10 + (*after++ - '0');
  char number[32];
  int number_length = snprintf(number, sizeof number, "%lld", value + 1);
  size_t prefix = (size_t)(digits - old->bytes), suffix = (size_t)(end - after);
  reserve(new_contents, prefix + (size_t)number_length + suffix);
  memcpy(new_contents->bytes, old->bytes, prefix);
  memcpy(new_contents->bytes + prefix, number, (size_t)number_length);
  memcpy(new_contents->bytes + prefix + number_length, after, suffix);
  new_contents->length = prefix + (size_t)number_length + suffix;
}

struct timed_document { long sequence; size_t bytes; };

static void timed_document(const struct buffer *old, struct buffer *new_contents, void *context) {
  (void)old;
  const struct timed_document *document = context;
  char head[128];
  int head_length = snprintf(head, sizeof head, "{\n  \"sequence\" : %ld,\n  \"sentAt\" : %lld,\n  \"payload\" : \"",
                             document->sequence, (long long)now_ns());
  size_t payload = document->bytes > 96 ? document->bytes - 96 : 0;
  reserve(new_contents, (size_t)head_length + payload + 8);
  memcpy(new_contents->bytes, head, (size_t)head_length);
  memset(new_contents->bytes + head_length, 'x', payload);
  memcpy(new_contents->bytes + head_length + payload, "\"\n}\n", 4);
  new_contents->length = (size_t)head_length + payload + 4;
}

static void wait_for_start(void) {
  printf("ready\n");
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) exit(1);
}

static int usage(void) {
  fprintf(stderr, "usage: floor increment FILE [--relaxed] [--bare] [--history] [--keep N]\n"
                  "       floor timed-writer FILE COUNT BYTES INTERVAL_US\n"
                  "       floor churn FILE SECONDS\n");
  return 64;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  srandom((unsigned)(now_ns() ^ getpid()));
  struct target t;
  target_init(&t, argv[2]);
  struct buffer old = {0}, new_contents = {0};
  struct history kept;
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--bare") == 0) bare = 1;
    if (strcmp(argv[i], "--history") == 0 || strcmp(argv[i], "--keep") == 0) {
      const char *slash = strrchr(t.path, '/');
      history_init(&kept, t.directory, slash ? slash + 1 : t.path);
      history = &kept;
    }
    if (strcmp(argv[i], "--keep") == 0) {
      if (i + 1 >= argc) return usage();
      history_set_keep(&kept, atol(argv[++i]));
    }
  }
  if (strcmp(argv[1], "increment") == 0) {
    int durable = 1;
    for (int i = 3; i < argc; i++) if (strcmp(argv[i], "--relaxed") == 0) durable = 0;
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
      long count = atol(line);
      for (long i = 0; i < count; i++) locked_replace(&t, durable, increment_counter, NULL, &old, &new_contents);
      printf("done\n");
      fflush(stdout);
    }
  } else if (strcmp(argv[1], "timed-writer") == 0 && argc == 6) {
    long count = atol(argv[3]);
    struct timed_document document = {0, (size_t)atol(argv[4])};
    long interval = atol(argv[5]);
    int64_t *renamed = calloc((size_t)count, sizeof *renamed);
    wait_for_start();
    for (long i = 0; i < count; i++) {
      document.sequence = i;
      renamed[i] = locked_replace(&t, 1, timed_document, &document, &old, &new_contents);
      if (interval > 0) usleep((useconds_t)interval);
    }
    printf("done\n");
    for (long i = 0; i < count; i++) printf("%ld %lld\n", i, (long long)renamed[i]);
  } else if (strcmp(argv[1], "churn") == 0 && argc == 4) {
    double seconds = atof(argv[3]);
    wait_for_start();
    int64_t end = now_ns() + (int64_t)(seconds * 1e9);
    long count = 0;
    while (now_ns() < end) {
      locked_replace(&t, 0, increment_counter, NULL, &old, &new_contents);
      count++;
    }
    printf("done %ld\n", count);
  } else {
    return usage();
  }
  fflush(stdout);
  return 0;
}
