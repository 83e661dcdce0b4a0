/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "util.h"

/* sysfs attributes are at most one page; procfs lists like /proc/interrupts are not
 * read through here. */
#define ATTR_MAX 65536

/* short_is_end: a read(2) that returns less than it was asked for has returned
 * the rest of the file (read_attr()), so the read that would return 0 is not made. */
/* at_start: pread(2) from offset 0 on, whatever the descriptor's position (a kept
 * sysfs descriptor read again: kernfs runs the attribute's show() afresh). */
static int read_fd_full_internal(int fd, size_t max, bool short_is_end, bool at_start, char **ret,
                                 size_t *ret_len) {
        /* Most reads are a sysfs value of a few bytes, and many are kept (a
         * setting's observed value, a disk's diskseq): they are read on the stack
         * and copied out at their size, so that each does not hold a page-sized
         * buffer, per value and per disk. Larger files grow on the heap. */
        char small[4096];
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        assert(ret);
        assert(ret_len);

        for (;;) {
                char *dst;
                size_t room;
                ssize_t n;
                if (!buf && len < sizeof(small)) {
                        dst = small + len;
                        room = sizeof(small) - len;
                } else {
                        if (!buf || alloc - len < 4096) {
                                char *nb;
                                size_t want = alloc ? alloc * 2 : 2 * sizeof(small);
                                if (want > max + 1)
                                        want = max + 1;
                                if (want <= len)
                                        return -EFBIG;
                                nb = realloc(buf, want + 1);
                                if (!nb)
                                        return -ENOMEM;
                                if (!buf)
                                        memcpy(nb, small, len);
                                buf = nb;
                                alloc = want;
                        }
                        dst = buf + len;
                        room = alloc - len;
                }
                /* Up to one byte more than allowed: a file that grew meanwhile is too big. */
                if (room > max + 1 - len)
                        room = max + 1 - len;
                n = at_start ? pread(fd, dst, room, (off_t) len) : read(fd, dst, room);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += n;
                if (len > max)
                        return -EFBIG;
                if (short_is_end && (size_t) n < room)
                        break;
        }
        if (!buf) {
                buf = malloc(len + 1);
                if (!buf)
                        return -ENOMEM;
                memcpy(buf, small, len);
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int read_fd_full(int fd, size_t max, char **ret, size_t *ret_len) {
        return read_fd_full_internal(fd, max, false, false, ret, ret_len);
}

/* read_fd_full() without the trailing newlines and NULs. */
static int read_fd_bounded_at(int fd, size_t max, bool short_is_end, bool at_start, char **ret) {
        char *buf;
        size_t len;
        int r;

        assert(ret);

        r = read_fd_full_internal(fd, max, short_is_end, at_start, &buf, &len);
        if (r < 0)
                return r;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\0'))
                len--;
        buf[len] = 0;
        *ret = buf;
        return 0;
}

static int read_fd_bounded(int fd, size_t max, bool short_is_end, char **ret) {
        return read_fd_bounded_at(fd, max, short_is_end, false, ret);
}

const char *file_strerror(int r) {
        if (r == -EBADFD || r == EBADFD)
                return "not a regular file";
        return strerror(r < 0 ? -r : r);
}

/* A descriptor opened for reading must be a regular file (of at most `max`
 * bytes by its size, when `check_size`: procfs and sysfs report sizes unrelated
 * to the contents, 0 or 4096). */
static int check_regular_fd(int fd, size_t max, bool check_size) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (check_size && (st.st_size < 0 || (uint64_t) st.st_size > max))
                return -EFBIG;
        return 0;
}

/* Open for reading without ever blocking in open(2) (a FIFO with no writer) and
 * insist on a regular file: a FIFO, socket or device where a file or an attribute
 * is expected would block read(2) or yield endless data. sysfs attributes and
 * procfs files are regular files, so this costs the real trees nothing. O_NONBLOCK
 * has no effect on regular files and stays set. */
static int open_regular(const char *path, int extra_flags, size_t max, bool check_size) {
        _cleanup_close_ int fd = -1;
        int r;

        assert(path);

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | extra_flags);
        if (fd < 0)
                return negative_errno();
        r = check_regular_fd(fd, max, check_size);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

int read_regular_fd(int fd, size_t max, char **ret) {
        int r;

        assert(ret);

        r = check_regular_fd(fd, max, false);
        if (r < 0)
                return r;
        return read_fd_bounded(fd, max, false, ret);
}

int read_full_file(const char *path, size_t max, char **ret) {
        _cleanup_close_ int fd = -1;

        assert(path);
        assert(ret);

        fd = open_regular(path, 0, max, false);
        if (fd < 0)
                return fd;
        return read_fd_bounded(fd, max, false, ret);
}

int read_regular_file(const char *path, size_t max, char **ret) {
        _cleanup_close_ int fd = -1;

        assert(path);
        assert(ret);

        fd = open_regular(path, O_NOFOLLOW, max, true);
        if (fd < 0)
                return fd;
        return read_fd_bounded(fd, max, false, ret);
}

/* A sysfs attribute is made by one show() into one page, a small procfs file
 * (/proc/irq/N/...) by one single_open() show, and a regular file elsewhere (a
 * test tree) ends where a read(2) returns less than asked: the first short read
 * has it all, and the read that would return 0 is saved (a fifth of the system
 * calls of every sysfs read, on every disk of every drift check). */
int read_attr(const char *path, char **ret) {
        _cleanup_close_ int fd = -1;

        assert(path);
        assert(ret);

        fd = open_regular(path, 0, ATTR_MAX, false);
        if (fd < 0)
                return fd;
        return read_fd_bounded(fd, ATTR_MAX, true, ret);
}

/* How many descriptors read_attr_kept() may hold open at once, all of them
 * together (from every thread of a reconcile); 0 (the default) keeps none. */
static atomic_uint kept_budget, kept_open;

void kept_attr_set_budget(unsigned n) {
        atomic_store(&kept_budget, n);
}

unsigned kept_attr_count(void) {
        return atomic_load(&kept_open);
}

void kept_attr_close(KeptAttr *k) {
        assert(k);

        if (!k->open)
                return;
        (void) close(k->fd);
        k->open = false;
        k->fd = -1;
        atomic_fetch_sub(&kept_open, 1);
}

/* A place under the budget for one more kept descriptor. */
static bool kept_reserve(void) {
        unsigned n = atomic_load(&kept_open);

        do
                if (n >= atomic_load(&kept_budget))
                        return false;
        while (!atomic_compare_exchange_weak(&kept_open, &n, n + 1));
        return true;
}

int read_attr_kept(const char *path, const char *attr, KeptAttr *k, char **ret) {
        _cleanup_free_ char *joined = NULL;
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        int r;

        assert(path);
        assert(k);
        assert(ret);

        if (k->open) {
                r = read_fd_bounded_at(k->fd, ATTR_MAX, true, true, ret);
                if (r >= 0 || r == -ENOMEM)
                        return r;
                /* ENODEV: its node was removed (the disk went, and may be back under
                 * the same name); whatever it was, the path answers afresh. */
                kept_attr_close(k);
        }
        if (attr) {
                joined = path_join(path, attr);
                if (!joined)
                        return -ENOMEM;
        }
        fd = open_regular(joined ?: path, 0, ATTR_MAX, false);
        if (fd < 0)
                return fd;
        r = read_fd_bounded(fd, ATTR_MAX, true, ret);
        if (r < 0)
                return r;
        /* Only the kernel's sysfs, asked of the kernel itself (not through libc,
         * where umockdev's preload answers SYSFS_MAGIC for its tree of regular
         * files): only kernfs runs show() again at each pread() and never replaces
         * an attribute by a rename, which a kept descriptor of a regular file
         * would go on reading. */
        if (k->elsewhere || !kept_reserve())
                return 0;
        if (syscall(SYS_fstatfs, fd, &sfs) == 0 && sfs.f_type == SYSFS_MAGIC) {
                k->fd = TAKE_FD(fd);
                k->open = true;
        } else {
                atomic_fetch_sub(&kept_open, 1);
                k->elsewhere = true; /* not asked again (a procfs row, a test tree) */
        }
        return 0;
}

int read_attr_at(const char *dir, const char *attr, char **ret) {
        _cleanup_free_ char *p = NULL;

        assert(dir);
        assert(attr);
        assert(ret);

        p = path_join(dir, attr);
        if (!p)
                return -ENOMEM;
        return read_attr(p, ret);
}

int write_attr(const char *path, const char *value) {
        _cleanup_free_ char *line = NULL;
        struct stat st;
        int fd, r = 0;
        ssize_t n;

        assert(path);
        assert(value);

        if (asprintf_safe(&line, "%s\n", value) < 0)
                return -ENOMEM;

        /* O_NONBLOCK: a FIFO without a reader fails with ENXIO instead of blocking;
         * anything but a regular file is refused before a byte is written. */
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_TRUNC | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                r = negative_errno();
        else if (!S_ISREG(st.st_mode))
                r = S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        do
                n = write(fd, line, strlen(line));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                r = negative_errno();
        else if ((size_t) n != strlen(line))
                r = -EIO;
        /* Some attributes report their error only on close (kernfs flushes there). */
        if (close(fd) < 0 && r == 0 && errno != EINTR)
                r = negative_errno();
        return r;
}

int write_attr_at(const char *dir, const char *attr, const char *value) {
        _cleanup_free_ char *p = NULL;

        assert(dir);
        assert(attr);
        assert(value);

        p = path_join(dir, attr);
        if (!p)
                return -ENOMEM;
        return write_attr(p, value);
}

int mkdir_p(const char *path, unsigned mode) {
        _cleanup_free_ char *p = NULL;

        assert(path);

        p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

/* The temporary of write_file_atomic_full(): "PATH.tmp.PID", truncated if it exists
 * (an earlier instance with the same PID that died between open and rename), or
 * with WRITE_FILE_EXCL_TEMP "PATH.tmp.<random>", created with O_EXCL. */
static int open_temp(const char *path, WriteFileFlags flags, char **ret_tmp) {
        int fd;

        assert(path);
        assert(ret_tmp);

        if (!(flags & WRITE_FILE_EXCL_TEMP)) {
                _cleanup_free_ char *tmp = NULL;
                if (asprintf_safe(&tmp, "%s.tmp.%d", path, (int) getpid()) < 0)
                        return -ENOMEM;
                fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
                if (fd < 0)
                        return negative_errno();
                *ret_tmp = TAKE_PTR(tmp);
                return fd;
        }
        for (unsigned attempt = 0; attempt < 16; attempt++) {
                _cleanup_free_ char *tmp = NULL;
                uint64_t rnd;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd))
                        rnd = ((uint64_t) getpid() << 32) ^ (uint64_t) time(NULL) ^ attempt;
                if (asprintf_safe(&tmp, "%s.tmp.%016llx", path, (unsigned long long) rnd) < 0)
                        return -ENOMEM;
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
                if (fd >= 0) {
                        *ret_tmp = TAKE_PTR(tmp);
                        return fd;
                }
                if (errno != EEXIST)
                        return negative_errno();
        }
        return -EEXIST;
}

int write_file_atomic_full(const char *path, const char *contents, size_t len, WriteFileFlags flags) {
        _cleanup_free_ char *tmp = NULL, *dir = NULL;
        _cleanup_close_ int fd = -1;
        char *slash;
        size_t done = 0;
        int r;

        assert(path);
        assert(contents || len == 0);

        /* The directory is there nearly always: made only when the temporary's
         * open says it is not (each mkdir is a system call per write otherwise). */
        fd = open_temp(path, flags, &tmp);
        if (fd == -ENOENT) {
                dir = strdup(path);
                if (!dir)
                        return -ENOMEM;
                slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return fd;
                *slash = 0;
                r = mkdir_p(dir, 0755);
                if (r < 0)
                        return r;
                fd = open_temp(path, flags, &tmp);
        }
        if (fd < 0)
                return fd;
        while (done < len) {
                ssize_t n = write(fd, contents + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        (void) unlink(tmp);
                        return r;
                }
                done += n;
        }
        if (close(TAKE_FD(fd)) < 0 || rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

int write_file_atomic(const char *path, const char *contents, size_t len) {
        assert(path);
        assert(contents || len == 0);

        return write_file_atomic_full(path, contents, len, 0);
}
