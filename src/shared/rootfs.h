/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Paths under `--root DIR`, resolved as if DIR were "/": an absolute symbolic link
 * or a ".." never leads out of DIR (openat2(2) with RESOLVE_IN_ROOT, Linux 5.6+;
 * where the kernel lacks it, the same resolution done component by component).
 * A root of NULL, "" or "/" means the real root: paths are used as they are.
 * `path` is the absolute path as seen inside the root ("/proc/interrupts"). */

/* open(2) of path inside root; returns the fd or -errno. */
int root_open(const char *root, const char *path, int flags, mode_t mode);

/* A whole regular file of at most max bytes inside root, like read_full_file()
 * (opened O_NONBLOCK; a FIFO or device is -EBADFD, a directory -EISDIR, more
 * than max -EFBIG; trailing newlines stripped). */
int root_read_file(const char *root, const char *path, size_t max, char **ret);

/* The same as read_regular_file(): the last component must not be a link
 * (-ELOOP). */
int root_read_regular_file(const char *root, const char *path, size_t max, char **ret);
/* root_read_file(), with the type of what `path` leads to checked before it is
 * opened for reading (an O_PATH descriptor first): a link to a device node is
 * refused (-EBADFD) without opening the device, whose open alone may act
 * (/dev/watchdog arms it). For files anyone may link anywhere: udev rules, TuneD
 * profiles. */
int root_read_file_typed(const char *root, const char *path, size_t max, char **ret);

/* The host path that path inside root resolves to, every link resolved within
 * root. Components that do not exist yet are appended as they are (a file or
 * directory about to be created); they must be plain names. -ELOOP for a link
 * loop, -ENOTDIR when a component is not a directory. */
int root_resolve(const char *root, const char *path, char **ret);

/* Tests: false resolves as on a kernel without openat2(2). */
void rootfs_set_openat2(bool enabled);

/* Whether root names a root other than "/". */
static inline int root_is_set(const char *root) {
        return root && root[0] && !(root[0] == '/' && root[1] == 0);
}
