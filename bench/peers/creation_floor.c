/*
 * creation_floor: the file system work of creating N `key:` storages, in plain C: the floor
 * the many-storages benchmark's creation is held to (bench/lib/many.py).
 *
 * For each of N keys in one directory, what creating a storage whose file is missing makes
 * the kernel do (strace `ccsync-bench many-storages`): create the sidecar KEY.json.lock;
 * create .KEY.json.tmp-XXXXXXXX (O_CREAT|O_EXCL|O_NOFOLLOW), write the default value, fsync,
 * rename it over KEY.json; make the history folder .KEY.json.history and append the first
 * version's line to its versions.log; fsync the directory. One inotify watch on the directory,
 * its events read after each key, as the storages' shared watcher reads them. No JSON, no
 * threads: what is left when ccsync's own work is taken away.
 *
 * Usage: creation_floor DIRECTORY N
 * Prints one line: "result storages=N create=SECONDS perStorageMs=MILLISECONDS".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what, const char *path) {
  fprintf(stderr, "creation_floor: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

static double now(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return time.tv_sec + time.tv_nsec / 1e9;
}

/* Reads the inotify events waiting, as the shared directory watcher does. */
static void drain(int watcher) {
  char buffer[64 * 1024];
  while (read(watcher, buffer, sizeof buffer) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: creation_floor DIRECTORY N\n");
    return 64;
  }
  const char *directory = argv[1];
  int count = atoi(argv[2]);
  int directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directoryFD < 0) fail("open", directory);
  int watcher = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watcher < 0) fail("inotify_init1", directory);
  uint32_t mask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE |
                  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;
  if (inotify_add_watch(watcher, directory, mask) < 0) fail("inotify_add_watch", directory);

  static const char value[] = "{\"counter\":0,\"name\":\"\"}\n";
  char path[4200], temporary[4096], history[4096], line[512];
  double start = now();
  for (int key = 0; key < count; key++) {
    snprintf(path, sizeof path, "%s/key-%d.json.lock", directory, key);
    int lock = open(path, O_RDONLY | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (lock < 0) fail("open", path);

    snprintf(temporary, sizeof temporary, "%s/.key-%d.json.tmp-%08x", directory, key, (unsigned)random());
    int file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (file < 0) fail("open", temporary);
    if (write(file, value, sizeof value - 1) != (ssize_t)(sizeof value - 1)) fail("write", temporary);
    if (fsync(file) != 0) fail("fsync", temporary);
    close(file);
    snprintf(path, sizeof path, "%s/key-%d.json", directory, key);
    if (rename(temporary, path) != 0) fail("rename", temporary);

    snprintf(history, sizeof history, "%s/.key-%d.json.history", directory, key);
    if (mkdir(history, 0755) != 0) fail("mkdir", history);
    snprintf(path, sizeof path, "%s/versions.log", history);
    int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (log < 0) fail("open", path);
    int length = snprintf(line, sizeof line, "{\"id\":\"1\",\"time\":\"2026-12-05T00:00:00.000Z\",\"key\":%d}\n", key);
    if (write(log, line, length) != length) fail("write", path);
    close(log);
    if (fsync(directoryFD) != 0) fail("fsync", directory);
    close(lock);
    drain(watcher);
  }
  double seconds = now() - start;
  printf("result storages=%d create=%.6f perStorageMs=%.6f\n", count, seconds, seconds * 1000 / count);
  return 0;
}
