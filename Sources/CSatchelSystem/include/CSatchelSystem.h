// Small portable wrappers over system calls Swift's Glibc module does not export.
#ifndef CSATCHEL_SYSTEM_H
#define CSATCHEL_SYSTEM_H
#include <stddef.h>
#include <sys/types.h>

/// Reads the extended attribute `name` of `path` into `buffer`; returns its length, or -1 (errno set).
ssize_t satchel_getxattr(const char *path, const char *name, void *buffer, size_t size);
/// Reads the extended attribute `name` of the open file `fd` into `buffer`; returns its length, or -1 (errno set).
ssize_t satchel_fgetxattr(int fd, const char *name, void *buffer, size_t size);
/// Sets the extended attribute `name` on the open file `fd`; returns 0, or -1 (errno set).
int satchel_fsetxattr(int fd, const char *name, const void *value, size_t size);
/// Removes the extended attribute `name` from the open file `fd`; returns 0, or -1 (errno set).
int satchel_fremovexattr(int fd, const char *name);
/// Starts writing the open file `fd`'s dirty pages to disk without waiting for them (Linux
/// `sync_file_range(…, SYNC_FILE_RANGE_WRITE)`; nothing elsewhere). A hint: only a sync makes them durable.
/// Returns 0, or -1 (errno set).
int satchel_start_writeback(int fd);
/// The machine's memory and swap together, in bytes (Linux `sysinfo`); 0 where unknown.
unsigned long long satchel_memory_and_swap(void);
/// Starts `file` (looked up in PATH when it has no slash) with `argv` and `envp` as `posix_spawnp` does, with an
/// empty signal mask and every signal at its default action (a child never inherits the blocked signals of
/// this process's threads), in `directory` when not NULL, in a process group of its own when `new_group`, with
/// `input`, `output`, `error` as its standard descriptors (-1: inherited). Returns 0 and sets `pid`, or an errno.
int satchel_spawn(const char *file, char *const argv[], char *const envp[], const char *directory, int new_group,
                  int input, int output, int error, pid_t *pid);
/// Makes `to` the foreground process group of the terminal `fd` when `from` is (nothing when `fd` is not a
/// terminal, or another group holds it); returns 0, or -1 (errno set).
int satchel_hand_terminal(int fd, pid_t from, pid_t to);
/// A `waitpid` status as a shell reports it: the exit code, or 128 + the signal that ended the process.
int satchel_exit_status(int status);

#endif
