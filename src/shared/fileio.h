/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Every read here opens with O_NONBLOCK and requires a regular file: a FIFO,
 * socket or device is -EBADFD (a directory -EISDIR) instead of a read that blocks
 * or never ends. sysfs attributes and procfs files are regular files. */

/* The text for an error of these functions: "not a regular file" for -EBADFD
 * (what strerror() calls "File descriptor in bad state"), strerror() otherwise. */
const char *file_strerror(int r);

/* Read a whole (small) attribute file; trailing newlines are stripped. */
int read_attr(const char *path, char **ret);
int read_attr_at(const char *dir, const char *attr, char **ret);

/* An attribute read again and again (every row of every disk, at every drift
 * check) keeps its descriptor open: each read after the first is one pread(2)
 * at offset 0, which has kernfs run the attribute's show() afresh, instead of
 * open, fstat, read and close (a quarter of the CPU, measured over 4096 queue
 * attributes in the test-bed guest). Zero-initialized: nothing kept. */
typedef struct KeptAttr {
        int fd;
        bool open;
        bool elsewhere; /* the file is not on sysfs: never kept */
} KeptAttr;

/* read_attr() of `path`, or read_attr_at() of `path` and `attr` when attr is not
 * NULL, keeping the descriptor in *k when the file is on sysfs and the budget
 * allows. A read through a kept descriptor that fails (ENODEV: the attribute's
 * device was removed, perhaps added again under the same name) closes it and
 * reads the path afresh, so the results are read_attr()'s. */
int read_attr_kept(const char *path, const char *attr, KeptAttr *k, char **ret);
void kept_attr_close(KeptAttr *k);
/* At most n descriptors kept at once, by all callers together; 0 (the default):
 * none, and read_attr_kept() is read_attr(). */
void kept_attr_set_budget(unsigned n);
unsigned kept_attr_count(void);

/* Read a whole regular file of up to `max` bytes (state and record files, which
 * grow with the number of disks). -EFBIG beyond that. */
int read_full_file(const char *path, size_t max, char **ret);

/* The same for a file whose contents are not trusted (a record another process, or
 * an earlier run, may have left): opened with O_NOFOLLOW|O_NONBLOCK (a symbolic
 * link is -ELOOP, a FIFO does not block), then it must be a regular file
 * (-EBADFD otherwise) of at most `max` bytes (-EFBIG). Trailing newlines and NULs
 * are stripped, as by read_full_file(). */
int read_regular_file(const char *path, size_t max, char **ret);

/* The same checks and bounded read on a descriptor the caller opened (e.g. inside
 * a --root tree): a regular file, at most `max` bytes, trailing newlines and NULs
 * stripped. The descriptor is left open. */
int read_regular_fd(int fd, size_t max, char **ret);

/* Read all of fd as it is, at most `max` bytes (-EFBIG beyond; a file that grows
 * while it is read is caught too), NUL-terminated, with its length (a NUL inside
 * is kept, for parsers that report it). No checks of the file type: the caller
 * has made them. The buffer grows as the data comes. */
int read_fd_full(int fd, size_t max, char **ret, size_t *ret_len);

/* Write one value to a sysfs/procfs attribute: one unbuffered write(2) of the
 * value plus a newline, only to a regular file (-EBADFD otherwise; a FIFO is never
 * waited on), no O_CREAT (an absent attribute is -ENOENT, never a new
 * file), O_TRUNC so fixture trees behave like the kernel (sysfs ignores it).
 * Returns 0 or the -errno of open/write/close. */
int write_attr(const char *path, const char *value);
int write_attr_at(const char *dir, const char *attr, const char *value);

/* Write a file atomically: temp file in the same directory, fsync-free rename.
 * Creates the parent directory (one level) with mode 0755 if missing. */
int write_file_atomic(const char *path, const char *contents, size_t len);

typedef enum WriteFileFlags {
        /* The temporary file gets a random name and is created with O_EXCL (and, as
         * always, O_NOFOLLOW|O_CLOEXEC), so nothing already at a temporary's path
         * (another writer's file, a link planted there) is ever truncated or written
         * through; a name that exists is simply not used. */
        WRITE_FILE_EXCL_TEMP = 1 << 0,
} WriteFileFlags;

/* write_file_atomic() with flags; write_file_atomic() is this with 0. */
int write_file_atomic_full(const char *path, const char *contents, size_t len, WriteFileFlags flags);

int mkdir_p(const char *path, unsigned mode);
