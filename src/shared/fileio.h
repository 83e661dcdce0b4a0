/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Read a whole (small) attribute file; trailing newlines are stripped. */
int read_attr(const char *path, char **ret);
int read_attr_at(const char *dir, const char *attr, char **ret);

/* Read a whole regular file of up to `max` bytes (state and record files, which
 * grow with the number of disks). -EFBIG beyond that. */
int read_full_file(const char *path, size_t max, char **ret);

/* Write one value to a sysfs/procfs attribute: one unbuffered write(2) of the
 * value plus a newline, no O_CREAT (an absent attribute is -ENOENT, never a new
 * file), O_TRUNC so fixture trees behave like the kernel (sysfs ignores it).
 * Returns 0 or the -errno of open/write/close. */
int write_attr(const char *path, const char *value);
int write_attr_at(const char *dir, const char *attr, const char *value);

/* Write a file atomically: temp file in the same directory, fsync-free rename.
 * Creates the parent directory (one level) with mode 0755 if missing. */
int write_file_atomic(const char *path, const char *contents, size_t len);

int mkdir_p(const char *path, unsigned mode);
