// C declarations the Glibc module does not export, for the System layer only.
#ifndef CCSYNC_SYSTEM_SHIMS_H
#define CCSYNC_SYSTEM_SHIMS_H
#include <spawn.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include "CCSyncTLS.h"

// GNU extensions hidden from Glibc's module map (declared here as glibc defines them).
int pipe2(int pipefd[2], int flags);
int mkostemp(char *template, int flags);
ssize_t getrandom(void *buffer, size_t length, unsigned int flags);
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#endif
