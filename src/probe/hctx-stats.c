/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "hctx-stats.h"
#include "util.h"

/* "poll\n", "18446744073709551615\n": a debugfs counter is one short line. */
#define HCTX_FILE_MAX 4096u

void hctx_stats_done(HctxStats *s) {
        assert(s);

        free(s->why_not);
        free(s->items);
        *s = (HctxStats){};
}

const HctxStat *hctx_stats_find(const HctxStats *s, unsigned index) {
        assert(s);

        for (size_t i = 0; i < s->n; i++)
                if (s->items[i].index == index)
                        return &s->items[i];
        return NULL;
}

/* Set why_not (the first reason wins); -ENOMEM or 0. */
_printf_(2, 3) static int not_available(HctxStats *s, const char *fmt, ...) {
        va_list ap;
        int r;

        assert(s);
        assert(fmt);

        s->available = false;
        if (s->why_not)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&s->why_not, fmt, ap);
        va_end(ap);
        if (r < 0) {
                s->why_not = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* not_available() for a problem inside the tree: 1, or -ENOMEM. */
#define UNAVAILABLE(s, ...) (not_available((s), __VA_ARGS__) < 0 ? -ENOMEM : 1)

/* Digits only, as the kernel prints "%lu" (no sign, no blanks, no hex). */
static int parse_counter(const char *s, uint64_t *ret) {
        assert(s);
        assert(ret);

        if (isempty(s) || strlen(s) > 20 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        return safe_atou64(s, ret);
}

/* "hctx<N>", N in decimal without leading zeros, as blk_mq_debugfs_register_hctx()
 * names them ("hctx%u"). */
static bool parse_hctx_name(const char *name, unsigned *ret) {
        const char *d;

        assert(name);
        assert(ret);

        if (!str_startswith(name, "hctx"))
                return false;
        d = name + 4;
        if (isempty(d) || strspn(d, "0123456789") != strlen(d) || (d[0] == '0' && d[1]) || strlen(d) > 9)
                return false;
        return safe_atou(d, ret) == 0;
}

/* One file of an hctx directory: 0 with *ret, -ENOENT when absent, other -errno. */
static int read_hctx_file(int dfd, const char *name, char **ret) {
        _cleanup_close_ int fd = -1;

        assert(dfd >= 0);
        assert(name);
        assert(ret);

        /* O_NONBLOCK: a FIFO in the tree opens without waiting for a writer, and
         * read_regular_fd() then refuses it (-EBADFD) before reading. */
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return read_regular_fd(fd, HCTX_FILE_MAX, ret);
}

/* Whether hctx/sched_tags has anything in it (its first bytes only: the whole
 * file grows with the number of CPUs). 1, 0, or -1 when absent or unreadable. */
static int read_scheduled(int dfd) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        char buf[16];
        ssize_t n;

        assert(dfd >= 0);

        fd = openat(dfd, "sched_tags", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -1;
        do
                n = read(fd, buf, sizeof(buf));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -1;
        /* block/blk-mq-debugfs.c: blk_mq_debugfs_tags_show() starts with "nr_tags=". */
        if (n == 0)
                return 0;
        return (size_t) n >= strlen("nr_tags=") && memcmp(buf, "nr_tags=", strlen("nr_tags=")) == 0 ? 1 : -1;
}

/* Read one counter file into *value / *has. 0 (also when absent, *has false), 1
 * when the stats were marked unavailable, -ENOMEM. */
static int read_counter(HctxStats *s, int dfd, const char *hctx, const char *name, uint64_t *value, bool *has) {
        _cleanup_free_ char *v = NULL;
        int r;

        r = read_hctx_file(dfd, name, &v);
        if (r == -ENOENT) {
                *has = false;
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return UNAVAILABLE(s, "%s/%s: %s", hctx, name, file_strerror(r));
        if (parse_counter(v, value) < 0)
                return UNAVAILABLE(s, "%s/%s: not a decimal counter", hctx, name);
        *has = true;
        return 0;
}

/* 0 read, 1 unavailable (why_not set), -ENOMEM. */
static int read_hctx(HctxStats *s, int disk_fd, const char *name, unsigned index, HctxStat *ret) {
        _cleanup_close_ int dfd = -1;
        _cleanup_free_ char *type = NULL;
        HctxStat h = {.index = index};
        int r;

        assert(s);
        assert(disk_fd >= 0);
        assert(name);
        assert(ret);

        dfd = openat(disk_fd, name, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
        if (dfd < 0) {
                r = -errno;
                return UNAVAILABLE(s, "%s: %s", name, strerror(-r));
        }

        r = read_hctx_file(dfd, "type", &type);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return UNAVAILABLE(s, "%s/type: %s", name, file_strerror(r));
        /* block/blk-mq-debugfs.c: hctx_types[] */
        if (!streq(type, "default") && !streq(type, "read") && !streq(type, "poll"))
                return UNAVAILABLE(s, "%s/type: not default, read or poll", name);
        strcpy(h.type, type);

        r = read_counter(s, dfd, name, "queued", &h.queued, &h.has_queued);
        if (r != 0)
                return r;
        r = read_counter(s, dfd, name, "run", &h.run, &h.has_run);
        if (r != 0)
                return r;
        h.scheduled = read_scheduled(dfd);
        *ret = h;
        return 0;
}

static int cmp_hctx(const void *a, const void *b) {
        const HctxStat *x = a, *y = b;

        return x->index < y->index ? -1 : x->index > y->index;
}

/* Whether a directory has no entries besides . and .. (an unmounted mount point). */
static bool dir_is_empty(const char *path) {
        DIR *d = opendir(path);
        struct dirent *de;
        bool empty = true;

        if (!d)
                return true;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                        empty = false;
                        break;
                }
        closedir(d);
        return empty;
}

static int read_disk(HctxStats *s, const char *debugfs_root, const char *disk) {
        _cleanup_free_ char *block = NULL;
        _cleanup_close_ int block_fd = -1;
        DIR *d = NULL;
        struct dirent *de;
        int disk_fd, r = 0;
        bool any_counter = false, keep_items = false;
        size_t count = 0;

        assert(s);
        assert(debugfs_root);
        assert(disk);

        block = path_join(debugfs_root, "block");
        if (!block)
                return -ENOMEM;
        block_fd = open(block, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        if (block_fd < 0) {
                r = -errno;
                if (r == -ENOENT && dir_is_empty(debugfs_root))
                        return not_available(s, "debugfs not mounted at %s", debugfs_root);
                if (r == -ENOENT)
                        return not_available(s, "no block/ in %s (kernel without CONFIG_BLK_DEBUG_FS)", debugfs_root);
                return not_available(s, "cannot open %s: %s%s", block, strerror(-r),
                                     r == -EACCES || r == -EPERM ? " (debugfs is readable by root only)" : "");
        }
        disk_fd = openat(block_fd, disk, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
        if (disk_fd < 0) {
                r = -errno;
                if (r == -ENOENT)
                        return not_available(s, "no block/%s in debugfs (not a blk-mq disk?)", disk);
                return not_available(s, "cannot open %s/%s: %s", block, disk, strerror(-r));
        }
        d = fdopendir(disk_fd);
        if (!d) {
                r = -errno;
                (void) close(disk_fd);
                return r == -ENOMEM ? r : not_available(s, "cannot read %s/%s: %s", block, disk, strerror(-r));
        }

        /* Count first: a tree with too many is refused before any of it is read. */
        while ((errno = 0, de = readdir(d))) {
                unsigned index;
                if (parse_hctx_name(de->d_name, &index) && ++count > HCTX_STATS_MAX) {
                        r = not_available(s, "more than %u hctx directories in block/%s", HCTX_STATS_MAX, disk);
                        goto out;
                }
        }
        if (errno > 0) {
                r = not_available(s, "cannot read %s/%s: %s", block, disk, strerror(errno));
                goto out;
        }
        if (count > 0) {
                s->items = calloc(count, sizeof(HctxStat));
                if (!s->items) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        rewinddir(d);

        s->available = true;
        while ((errno = 0, de = readdir(d))) {
                unsigned index;

                if (!parse_hctx_name(de->d_name, &index))
                        continue;
                if (s->n >= count) { /* one appeared meanwhile */
                        r = not_available(s, "the hctx directories of block/%s changed while read", disk);
                        goto out;
                }
                r = read_hctx(s, dirfd(d), de->d_name, index, &s->items[s->n]);
                if (r != 0)
                        goto out;
                any_counter = any_counter || s->items[s->n].has_queued || s->items[s->n].has_run;
                s->n++;
        }
        if (errno > 0) {
                r = not_available(s, "cannot read %s/%s: %s", block, disk, strerror(errno));
                goto out;
        }
        if (s->n == 0) {
                r = not_available(s, "no hctx directories in block/%s", disk);
                goto out;
        }
        qsort(s->items, s->n, sizeof(HctxStat), cmp_hctx);
        if (!any_counter) {
                /* The queue types are still worth having. */
                keep_items = true;
                r = not_available(s, "this kernel's blk-mq debugfs has no per-queue counters (\"queued\" was "
                                     "removed in 5.16, \"run\" in 6.9)");
        }
out:
        closedir(d);
        /* Numbers from a tree with one bad file are not trusted either. */
        if (!s->available && !keep_items) {
                free(s->items);
                s->items = NULL;
                s->n = 0;
        }
        return r < 0 ? r : 0;
}

int hctx_stats_read(const char *debugfs_root, const char *disk, HctxStats *ret) {
        HctxStats s = {};
        int r;

        assert(debugfs_root);
        assert(disk);
        assert(ret);

        if (isempty(disk) || strchr(disk, '/') || streq(disk, ".") || streq(disk, ".."))
                return -EINVAL;

        r = read_disk(&s, debugfs_root, disk);
        if (r < 0) {
                hctx_stats_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}
