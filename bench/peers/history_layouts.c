/*
 * history_layouts.c: what keeping each replaced version under a name costs the durable
 * write itself, with no JSON and none of ccsync's code, in the layouts a history could take.
 * bench/history-layouts runs it; docs/BENCHMARK-METHOD.md ("Profiling") reads its table.
 *
 *   history_layouts DIRECTORY LAYOUT WRITES PROCESSES
 *
 * PROCESSES processes each make WRITES locked read-modify-writes of DIRECTORY/doc.json
 * (which must exist): flock a lock file, read the document, write the changed bytes to a
 * temporary file, fsync it, put it in place, unlock, fsync the directory: the durable
 * protocol of ccsync and of bench/peers/floor.c, reduced to its system calls. Prints the
 * wall time per write, in microseconds. LAYOUT is one of:
 *
 *   off            nothing kept: the rename frees the replaced version
 *   log            one line appended to .doc.history/versions.log after the rename (no fsync)
 *   link           the replaced version linked as .doc.history/ID.json before the write
 *   link+log       both: the layout ccsync keeps (docs/SEMANTICS.md, "History")
 *   exchange       no link: the temporary file is made in .doc.history/ and swapped with the
 *                  document by renameat2(RENAME_EXCHANGE), so the replaced version leaves
 *                  under the temporary's name, renamed to its id after the unlock
 *   exchange+log   that and the log line
 *
 * Every layout that keeps versions removes the one 21 writes back, after the unlock, as a
 * window of 20 does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 20

static void die(const char *what, const char *path) {
  fprintf(stderr, "history_layouts: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

static int64_t now_ns(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return (int64_t)time.tv_sec * 1000000000 + time.tv_nsec;
}

struct layout { int link, exchange, log; };

static struct layout parse_layout(const char *name) {
  if (strcmp(name, "off") == 0) return (struct layout){0, 0, 0};
  if (strcmp(name, "log") == 0) return (struct layout){0, 0, 1};
  if (strcmp(name, "link") == 0) return (struct layout){1, 0, 0};
  if (strcmp(name, "link+log") == 0) return (struct layout){1, 0, 1};
  if (strcmp(name, "exchange") == 0) return (struct layout){0, 1, 0};
  if (strcmp(name, "exchange+log") == 0) return (struct layout){0, 1, 1};
  fprintf(stderr, "history_layouts: unknown layout %s\n", name);
  exit(64);
}

static void write_all(int file, const char *bytes, size_t length, const char *path) {
  while (length > 0) {
    ssize_t written = write(file, bytes, length);
    if (written < 0) { if (errno == EINTR) continue; die("write", path); }
    bytes += written; length -= (size_t)written;
  }
}

/* The kept versions this process made, oldest first, to remove each once 20 newer are kept. */
static char kept_ring[WINDOW + 1][1024];
static int kept_next;

static void keep_in_window(const char *path) {
  if (kept_ring[kept_next][0] && unlink(kept_ring[kept_next]) != 0 && errno != ENOENT) die("unlink", kept_ring[kept_next]);
  snprintf(kept_ring[kept_next], sizeof kept_ring[kept_next], "%s", path);
  kept_next = (kept_next + 1) % (WINDOW + 1);
}

static void one_write(const char *directory, struct layout layout, const char *writer, long sequence) {
  /* The directory's length was checked: these paths fit. */
  char document[512], lock_path[512], history[512], temporary[1024], kept[1024], log_path[1024];
  snprintf(document, sizeof document, "%s/doc.json", directory);
  snprintf(lock_path, sizeof lock_path, "%s/.doc.json.lock", directory);
  snprintf(history, sizeof history, "%s/.doc.history", directory);
  snprintf(log_path, sizeof log_path, "%s/versions.log", history);
  /* Ids unique across the processes: the writer's name and its sequence number. */
  snprintf(kept, sizeof kept, "%s/%s-%ld.json", history, writer, sequence);
  snprintf(temporary, sizeof temporary, "%s/.doc.json.tmp-%s-%ld", layout.exchange ? history : directory, writer, sequence);

  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) die("open", lock_path);
  while (flock(lock, LOCK_EX) != 0) if (errno != EINTR) die("flock", lock_path);
  int data = open(document, O_RDONLY | O_CLOEXEC);
  if (data < 0) die("open", document);
  char bytes[4096];
  ssize_t length = read(data, bytes, sizeof bytes);
  if (length <= 0) die("read", document);
  if (layout.link && link(document, kept) != 0) die("link", kept);

  bytes[length - 2] = (char)('0' + sequence % 10);  /* the change: one byte before the closing "}\n" */
  int file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (file < 0) die("create", temporary);
  write_all(file, bytes, (size_t)length, temporary);
  if (fsync(file) != 0) die("fsync", temporary);
  if (layout.exchange) {
    if (syscall(SYS_renameat2, AT_FDCWD, temporary, AT_FDCWD, document, RENAME_EXCHANGE) != 0) die("renameat2", document);
  } else if (rename(temporary, document) != 0) {
    die("rename", temporary);
  }
  if (layout.log) {
    int log = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log < 0) die("open", log_path);
    char line[320];
    int line_length = snprintf(line, sizeof line,
      "{\"id\":\"%s-%ld\",\"time\":\"2026-12-05T00:00:00.000Z\",\"author\":{\"host\":\"h\",\"user\":\"u\",\"pid\":%d,"
      "\"program\":\"history_layouts\"},\"device\":1,\"inode\":1}\n", writer, sequence, getpid());
    write_all(log, line, (size_t)line_length, log_path);
    close(log);
  }
  close(file);
  close(data);
  flock(lock, LOCK_UN);
  close(lock);
  /* The replaced version, swapped out under the temporary's name, takes its id's name. */
  if (layout.exchange && rename(temporary, kept) != 0) die("rename", temporary);
  int folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder < 0 || fsync(folder) != 0) die("fsync", directory);
  close(folder);
  if (layout.link || layout.exchange) keep_in_window(kept);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: history_layouts DIRECTORY off|log|link|link+log|exchange|exchange+log WRITES PROCESSES\n");
    return 64;
  }
  const char *directory = argv[1];
  if (strlen(directory) > 400) { fprintf(stderr, "history_layouts: the directory's path is too long\n"); return 64; }
  struct layout layout = parse_layout(argv[2]);
  long writes = atol(argv[3]);
  int processes = atoi(argv[4]);
  char history[512];
  snprintf(history, sizeof history, "%s/.doc.history", directory);
  if (mkdir(history, 0755) != 0 && errno != EEXIST) die("mkdir", history);
  int64_t start = now_ns();
  for (int process = 0; process < processes; process++) {
    pid_t child = fork();
    if (child < 0) die("fork", directory);
    if (child == 0) {
      char writer[16];
      snprintf(writer, sizeof writer, "w%d", process);
      for (long sequence = 0; sequence < writes; sequence++) one_write(directory, layout, writer, sequence);
      _exit(0);
    }
  }
  int failed = 0;
  for (int process = 0; process < processes; process++) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) return 1;
  printf("%.1f\n", (double)(now_ns() - start) / 1000.0 / (double)(writes * processes));
  return 0;
}
