/*
 * spawn_loop N PROGRAM [ARGUMENTS...]: runs PROGRAM N times, one after another, with
 * posix_spawnp (stdin, stdout and stderr on /dev/null) and waitpid, and prints
 * "NANOSECONDS FAILURES": the wall time of the whole loop and how many runs did not exit 0.
 * The per-call cost of a command-line tool, spawn and exit included. An argument holding "{N}"
 * gets the call's number (1, 2, ...) in its place: a write whose value changes on every call
 * (a tool may skip writing a value equal to the one stored).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: spawn_loop N PROGRAM [ARGUMENTS...] (\"{N}\" in an argument: the call's number)\n");
    return 64;
  }
  long count = atol(argv[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  /* The arguments holding "{N}", rewritten before each call, inside the timing: a sprintf is
   * nothing next to a spawn. */
  int arguments = argc - 2;
  char **call = calloc((size_t)arguments + 1, sizeof *call);
  char **numbered = calloc((size_t)arguments, sizeof *numbered);
  for (int a = 0; a < arguments; a++) {
    call[a] = argv[a + 2];
    if (strstr(argv[a + 2], "{N}")) numbered[a] = malloc(strlen(argv[a + 2]) + 24);
  }
  long failures = 0;
  int64_t start = now_ns();
  for (long i = 0; i < count; i++) {
    for (int a = 0; a < arguments; a++) {
      if (!numbered[a]) continue;
      const char *mark = strstr(argv[a + 2], "{N}");
      sprintf(numbered[a], "%.*s%ld%s", (int)(mark - argv[a + 2]), argv[a + 2], i + 1, mark + 3);
      call[a] = numbered[a];
    }
    pid_t child;
    if (posix_spawnp(&child, call[0], &actions, NULL, call, environ) != 0) {
      perror("spawn_loop: posix_spawnp");
      return 1;
    }
    int status;
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failures++;
  }
  printf("%lld %ld\n", (long long)(now_ns() - start), failures);
  return 0;
}
