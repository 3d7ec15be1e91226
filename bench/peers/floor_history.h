/*
 * floor_history.h: the history ccsync keeps of a file by default (docs/SEMANTICS.md,
 * "History"), in plain C, so that the C floor makes the system calls a write makes for it and
 * the ratio to the floor is ccsync's own overhead (issue: "where another issue's feature needs
 * a call, the floor makes it too").
 *
 * Per write, as ccsync does it (strace a `ccsync set` to compare): under the lock, a stat of
 * the history's `keep` file (the window belongs to the history), the log opened for appending
 * and its fstat; when the log is not as this process left it, its added part read (another
 * process wrote) for the last version's id, device and inode; a link of the version being
 * replaced as `ID.json` (no copy, no fsync); after the rename, one line appended naming the
 * new version (id, time, author, device, inode) and, past 64 lines over the window, the log
 * compacted by rename; after the unlock, the version pushed out of the window removed, beside
 * the directory's fsync on another thread when there is one to overlap with.
 */
#include <pthread.h>

struct history {
  char folder[2 * PATH_MAX + 16], log[2 * PATH_MAX + 32], keep[2 * PATH_MAX + 32];
  /* The log as this process last left it. */
  dev_t log_device; ino_t log_inode; off_t log_size;
  long last_id, lines;
  dev_t last_device; ino_t last_inode;
  /* The write in progress; `off` when `keep` says 0 (nothing kept, nothing logged). */
  int log_file, off; long kept_id, window;
  char to_remove[2 * PATH_MAX + 64];
};

static void history_init(struct history *h, const char *directory, const char *name) {
  memset(h, 0, sizeof *h);
  snprintf(h->folder, sizeof h->folder, "%s/.%s.history", directory, name);
  snprintf(h->log, sizeof h->log, "%s/versions.log", h->folder);
  snprintf(h->keep, sizeof h->keep, "%s/keep", h->folder);
  h->log_file = -1;
}

/* --keep N: writes N to the history's `keep` file, as ccsync's `--keep N` does. */
static void history_set_keep(struct history *h, long window) {
  if (mkdir(h->folder, 0755) != 0 && errno != EEXIST) die("mkdir", h->folder);
  int keep = open(h->keep, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (keep < 0) die("open", h->keep);
  char text[32];
  int length = snprintf(text, sizeof text, "%ld\n", window);
  write_all(keep, text, (size_t)length, h->keep);
  close(keep);
}

/* The id, device and inode of the last complete line of `text`, and its line count. */
static void history_scan(struct history *h, const char *text, size_t length) {
  const char *end = text + length;
  for (const char *p = text; p < end; p++) if (*p == '\n') h->lines++;
  if (length < 2) return;
  const char *line_end = end - 1, *line = line_end;
  while (line > text && line[-1] != '\n') line--;
  const char *found;
  if ((found = memmem(line, (size_t)(line_end - line), "\"id\":", 5))) h->last_id = atol(found + 5);
  if ((found = memmem(line, (size_t)(line_end - line), "\"device\":", 9))) h->last_device = (dev_t)atoll(found + 9);
  if ((found = memmem(line, (size_t)(line_end - line), "\"inode\":", 8))) h->last_inode = (ino_t)atoll(found + 8);
}

static void read_at(int fd, char *into, size_t length, off_t at, const char *path) {
  while (length > 0) {
    ssize_t got = pread(fd, into, length, at);
    if (got < 0) { if (errno == EINTR) continue; die("pread", path); }
    if (got == 0) die("short log", path);
    into += got; length -= (size_t)got; at += got;
  }
}

/* Under the lock, before the write: keeps the version being replaced (`replaced`, the data
 * file as read) as a link. */
static void history_keep_replaced(struct history *h, const char *path, const struct stat *replaced) {
  struct stat status;
  h->window = 20;
  if (stat(h->keep, &status) == 0) {
    char text[32] = {0};
    int keep = open(h->keep, O_RDONLY | O_CLOEXEC);
    if (keep >= 0) {  /* its fstat too, as ccsync reads a file of the size it is */
      if (fstat(keep, &status) == 0 && read(keep, text, sizeof text - 1) > 0) h->window = atol(text);
      close(keep);
    }
  }
  h->off = h->window == 0;
  if (h->off) return;  /* as ccsync with `--keep 0`: the history is off, nothing else to do */
  h->log_file = open(h->log, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (h->log_file < 0 && errno == ENOENT) {
    if (mkdir(h->folder, 0755) != 0 && errno != EEXIST) die("mkdir", h->folder);
    h->log_file = open(h->log, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  if (h->log_file < 0) die("open", h->log);
  if (fstat(h->log_file, &status) != 0) die("fstat", h->log);
  if (status.st_dev != h->log_device || status.st_ino != h->log_inode || status.st_size != h->log_size) {
    /* Another process wrote: read what it added (or the whole log, when it was replaced). */
    off_t from = (status.st_dev == h->log_device && status.st_ino == h->log_inode && status.st_size > h->log_size) ? h->log_size : 0;
    if (from == 0) h->lines = 0;
    size_t length = (size_t)(status.st_size - from);
    char *added = malloc(length + 1);
    read_at(h->log_file, added, length, from, h->log);
    history_scan(h, added, length);
    free(added);
    h->log_device = status.st_dev; h->log_inode = status.st_ino; h->log_size = status.st_size;
  }
  h->kept_id = (h->last_device == replaced->st_dev && h->last_inode == replaced->st_ino) ? h->last_id : h->last_id + 1;
  char kept[2 * PATH_MAX + 64];
  snprintf(kept, sizeof kept, "%s/%ld.json", h->folder, h->kept_id);
  if (link(path, kept) != 0 && errno != EEXIST) die("link", kept);
}

/* `seconds` since the epoch as ccsync's UTC timestamp, 2026-12-05T15:20:26.422Z. */
static int utc_timestamp(char *into, size_t size, const struct timespec *now) {
  long long days = now->tv_sec / 86400, seconds = now->tv_sec % 86400;
  /* civil_from_days (H. Hinnant) */
  long long z = days + 719468, era = z / 146097, doe = z - era * 146097;
  long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  long long mp = (5 * doy + 2) / 153, day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
  long long year = yoe + era * 400 + (month <= 2);
  return snprintf(into, size, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03ldZ", year, month, day, seconds / 3600,
                  seconds / 60 % 60, seconds % 60, now->tv_nsec / 1000000);
}

static void history_compact(struct history *h, off_t size) {
  char *text = malloc((size_t)size);
  read_at(h->log_file, text, (size_t)size, 0, h->log);
  long keep = h->window + 1;
  /* The last `keep` lines start after the newline keep + 1 from the end (the log ends in one). */
  const char *start = text + size;
  for (long newlines = 0; start > text; start--) if (start[-1] == '\n' && ++newlines == keep + 1) break;
  char temporary[2 * PATH_MAX + 64];
  snprintf(temporary, sizeof temporary, "%s.tmp-%06lx", h->log, (unsigned long)random() & 0xffffff);
  int file = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (file < 0) die("create", temporary);
  write_all(file, start, (size_t)(text + size - start), temporary);
  close(file);
  if (rename(temporary, h->log) != 0) die("rename", temporary);
  free(text);
  h->lines = keep;
  h->log_device = 0;  /* read again next time, as ccsync forgets the log it replaced */
}

/* Under the lock, after the rename: logs the new version (`written`, the new file's status). */
static void history_record(struct history *h, const struct stat *written) {
  if (h->off) return;
  static char author[256];
  if (!author[0]) {
    char host[128] = "localhost";
    gethostname(host, sizeof host - 1);
    const char *user = getenv("USER") ? getenv("USER") : "root";
    snprintf(author, sizeof author, "{\"host\":\"%s\",\"user\":\"%s\",\"pid\":%d,\"program\":\"floor\"}", host, user, getpid());
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char time_text[96], line[1024];
  utc_timestamp(time_text, sizeof time_text, &now);
  long id = h->kept_id + 1;
  int length = snprintf(line, sizeof line, "{\"id\":%ld,\"time\":\"%s\",\"author\":%s,\"device\":%llu,\"inode\":%llu}\n", id, time_text,
                        author, (unsigned long long)written->st_dev, (unsigned long long)written->st_ino);
  write_all(h->log_file, line, (size_t)length, h->log);
  h->log_size += length;
  h->lines++;
  h->last_id = id; h->last_device = written->st_dev; h->last_inode = written->st_ino;
  if (h->lines > h->window + 64) history_compact(h, h->log_size);
  close(h->log_file);
  h->log_file = -1;
  snprintf(h->to_remove, sizeof h->to_remove, "%s/%ld.json", h->folder, id - h->window - 1);
}

/* After the unlock: removes the version that fell out of the window, on a thread of its own
 * while `overlap_with` (the directory's fsync) runs, when there is one. */
static pthread_mutex_t remover_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t remover_wake = PTHREAD_COND_INITIALIZER, remover_done = PTHREAD_COND_INITIALIZER;
static const char *remover_path;
static int remover_started;

static void *remover(void *unused) {
  (void)unused;
  pthread_mutex_lock(&remover_mutex);
  for (;;) {
    while (!remover_path) pthread_cond_wait(&remover_wake, &remover_mutex);
    const char *path = remover_path;
    pthread_mutex_unlock(&remover_mutex);
    unlink(path);
    pthread_mutex_lock(&remover_mutex);
    remover_path = NULL;
    pthread_cond_signal(&remover_done);
  }
  return NULL;
}

static void history_remove_old(struct history *h, void (*overlap_with)(void *), void *context) {
  if (h->off) { if (overlap_with) overlap_with(context); return; }
  if (!overlap_with) { unlink(h->to_remove); return; }
  if (!remover_started) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, remover, NULL) != 0) die("pthread_create", h->folder);
    remover_started = 1;
  }
  pthread_mutex_lock(&remover_mutex);
  remover_path = h->to_remove;
  pthread_cond_signal(&remover_wake);
  pthread_mutex_unlock(&remover_mutex);
  overlap_with(context);
  pthread_mutex_lock(&remover_mutex);
  while (remover_path) pthread_cond_wait(&remover_done, &remover_mutex);
  pthread_mutex_unlock(&remover_mutex);
}
