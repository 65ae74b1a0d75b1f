#include "CSatchelSystem.h"
#include <sys/xattr.h>

ssize_t satchel_getxattr(const char *path, const char *name, void *buffer, size_t size) {
#if defined(__APPLE__)
    return getxattr(path, name, buffer, size, 0, 0);
#else
    return getxattr(path, name, buffer, size);
#endif
}

int satchel_fsetxattr(int fd, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return fsetxattr(fd, name, value, size, 0, 0);
#else
    return fsetxattr(fd, name, value, size, 0);
#endif
}

int satchel_fremovexattr(int fd, const char *name) {
#if defined(__APPLE__)
    return fremovexattr(fd, name, 0);
#else
    return fremovexattr(fd, name);
#endif
}

ssize_t satchel_fgetxattr(int fd, const char *name, void *buffer, size_t size) {
#if defined(__APPLE__)
    return fgetxattr(fd, name, buffer, size, 0, 0);
#else
    return fgetxattr(fd, name, buffer, size);
#endif
}
