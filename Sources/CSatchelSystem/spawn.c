#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <termios.h>
#include <sys/wait.h>
#include <unistd.h>
#include "CSatchelSystem.h"

int satchel_spawn(const char *file, char *const argv[], char *const envp[], const char *directory, int new_group,
                  int input, int output, int error, pid_t *pid) {
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_t actions;
    int status = posix_spawnattr_init(&attributes);
    if (status != 0) return status;
    status = posix_spawn_file_actions_init(&actions);
    if (status != 0) {
        posix_spawnattr_destroy(&attributes);
        return status;
    }
    // The child starts with no signal blocked and every signal at its default action, whatever this
    // process's threads block or ignore (Swift's and NIO's threads block signals).
    // Every bit set, not sigfillset: glibc's leaves out its own real-time signals (32, 33), and an ignored one of
    // those would pass to the child too.
    sigset_t empty, all;
    sigemptyset(&empty);
    memset(&all, 0xff, sizeof all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (new_group) flags |= POSIX_SPAWN_SETPGROUP;
    if ((status = posix_spawnattr_setsigmask(&attributes, &empty)) != 0) goto done;
    if ((status = posix_spawnattr_setsigdefault(&attributes, &all)) != 0) goto done;
    if (new_group && (status = posix_spawnattr_setpgroup(&attributes, 0)) != 0) goto done;
    if ((status = posix_spawnattr_setflags(&attributes, flags)) != 0) goto done;
    if (input >= 0 && input != 0 && (status = posix_spawn_file_actions_adddup2(&actions, input, 0)) != 0) goto done;
    if (output >= 0 && output != 1 && (status = posix_spawn_file_actions_adddup2(&actions, output, 1)) != 0) goto done;
    if (error >= 0 && error != 2 && (status = posix_spawn_file_actions_adddup2(&actions, error, 2)) != 0) goto done;
    // The child gets stdin, stdout and stderr and nothing else: a descriptor this process opened without
    // close-on-exec (a listening socket, an event loop's eventfd, a pipe) is closed after the dup2s above.
#if defined(__APPLE__)
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
    for (int fd = 0; fd < 3; fd++) {
        if ((status = posix_spawn_file_actions_addinherit_np(&actions, fd)) != 0) goto done;
    }
    if ((status = posix_spawnattr_setflags(&attributes, flags)) != 0) goto done;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    if ((status = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) != 0) goto done;
#endif  // elsewhere (an older C library): only descriptors opened close-on-exec stay out of the child
    if (directory != NULL) {
#if defined(__linux__) || defined(__APPLE__)
        if ((status = posix_spawn_file_actions_addchdir_np(&actions, directory)) != 0) goto done;
#else
        status = ENOSYS;
        goto done;
#endif
    }
    status = posix_spawnp(pid, file, &actions, &attributes, argv, envp);
done:
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return status;
}

int satchel_hand_terminal(int fd, pid_t from, pid_t to) {
    if (!isatty(fd) || tcgetpgrp(fd) != from) return 0;
    // A process that is not in the terminal's foreground group gets SIGTTOU for tcsetpgrp unless it
    // blocks the signal: block it for the call (this thread's mask only).
    sigset_t block, previous;
    sigemptyset(&block);
    sigaddset(&block, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &block, &previous);
    int result = tcsetpgrp(fd, to);
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    errno = saved;
    return result;
}

int satchel_exit_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 255;
}
