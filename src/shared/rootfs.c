/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fileio.h"
#include "macro.h"
#include "rootfs.h"
#include "util.h"

/* Symbolic links followed in one resolution, as the kernel's MAXSYMLINKS. */
#define ROOT_MAX_LINKS 40

static bool use_openat2 = true;

void rootfs_set_openat2(bool enabled) {
        use_openat2 = enabled;
}

static int openat2_in_root(int dirfd, const char *path, int flags, mode_t mode) {
        assert(path);

        if (!use_openat2)
                return -ENOSYS;
#ifdef SYS_openat2
        struct open_how how = {
                .flags = (uint64_t) flags,
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        int fd;
        do
                fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        while (fd < 0 && errno == EAGAIN); /* a rename raced the lookup (RESOLVE_IN_ROOT) */
        return fd < 0 ? negative_errno() : fd;
#else
        return -ENOSYS;
#endif
}

/* Without openat2: resolve path inside the directory rootfd component by
 * component, following links as the kernel would with RESOLVE_IN_ROOT. The result
 * is relative to the root ("" for the root itself), plus in *ret_missing the
 * components from the first one that does not exist. */
static int resolve_by_hand(int rootfd, const char *path, char **ret, char **ret_missing) {
        _cleanup_free_ char *cur = NULL, *todo = NULL;
        unsigned links = 0;

        assert(path);
        assert(ret);

        cur = strdup("");
        todo = strdup(path);
        if (!cur || !todo)
                return -ENOMEM;
        for (;;) {
                char *p = todo, *slash, *name, *cand = NULL;
                struct stat st;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                slash = strchr(p, '/');
                name = strndup(p, slash ? (size_t) (slash - p) : strlen(p));
                if (!name)
                        return -ENOMEM;
                memmove(todo, slash ? slash : p + strlen(p), strlen(slash ? slash : p + strlen(p)) + 1);
                if (streq(name, ".")) {
                        free(name);
                        continue;
                }
                if (streq(name, "..")) {
                        char *last = strrchr(cur, '/');
                        if (last)
                                *last = 0;
                        else
                                cur[0] = 0; /* never above the root */
                        free(name);
                        continue;
                }
                if (asprintf_safe(&cand, "%s%s%s", cur, cur[0] ? "/" : "", name) < 0) {
                        free(name);
                        return -ENOMEM;
                }
                if (fstatat(rootfd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        int r = negative_errno();
                        if (r == -ENOENT && ret_missing) {
                                char *rest = NULL;
                                r = asprintf_safe(&rest, "%s%s", name, todo);
                                free(name);
                                free(cand);
                                if (r < 0)
                                        return -ENOMEM;
                                *ret_missing = rest;
                                *ret = TAKE_PTR(cur);
                                return 0;
                        }
                        free(name);
                        free(cand);
                        return r;
                }
                free(name);
                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t n;
                        char *nt = NULL;
                        if (++links > ROOT_MAX_LINKS) {
                                free(cand);
                                return -ELOOP;
                        }
                        n = readlinkat(rootfd, cand, target, sizeof(target) - 1);
                        free(cand);
                        if (n < 0)
                                return negative_errno();
                        target[n] = 0;
                        if (target[0] == '/')
                                cur[0] = 0; /* absolute: from the root */
                        if (asprintf_safe(&nt, "%s/%s", target, todo) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = nt;
                        continue;
                }
                if (todo[strspn(todo, "/")] && !S_ISDIR(st.st_mode)) {
                        free(cand);
                        return -ENOTDIR;
                }
                free(cur);
                cur = cand;
        }
        if (ret_missing)
                *ret_missing = NULL;
        *ret = TAKE_PTR(cur);
        return 0;
}

static int open_root_dir(const char *root) {
        int fd;

        assert(root);

        fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

int root_open(const char *root, const char *path, int flags, mode_t mode) {
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *rel = NULL, *missing = NULL, *full = NULL;
        int fd, r;

        assert(path);

        if (!root_is_set(root)) {
                fd = open(path, flags | O_CLOEXEC, mode);
                return fd < 0 ? negative_errno() : fd;
        }
        rootfd = open_root_dir(root);
        if (rootfd < 0)
                return rootfd;
        fd = openat2_in_root(rootfd, path, flags | O_CLOEXEC, mode);
        if (fd != -ENOSYS)
                return fd;
        /* The kernel has no openat2 (before 5.6): resolve by hand, then open what
         * that found without following a link planted since. */
        if (flags & O_NOFOLLOW) {
                /* The last component itself must not be a link: resolve its directory. */
                _cleanup_free_ char *dir = strdup(path);
                char *slash = dir ? strrchr(dir, '/') : NULL;
                if (!dir)
                        return -ENOMEM;
                if (!slash || !slash[1] || streq(slash + 1, ".") || streq(slash + 1, ".."))
                        return -EINVAL;
                missing = strdup(slash + 1);
                *slash = 0;
                if (!missing)
                        return -ENOMEM;
                r = resolve_by_hand(rootfd, dir, &rel, NULL);
        } else
                r = resolve_by_hand(rootfd, path, &rel, (flags & O_CREAT) ? &missing : NULL);
        if (r < 0)
                return r;
        if (missing && strchr(missing, '/'))
                return -ENOENT;
        if (asprintf_safe(&full, "%s%s%s", rel, rel[0] && missing ? "/" : "", missing ?: "") < 0)
                return -ENOMEM;
        fd = openat(rootfd, full[0] ? full : ".", flags | O_NOFOLLOW | O_CLOEXEC, mode);
        return fd < 0 ? negative_errno() : fd;
}

static int read_in_root(const char *root, const char *path, size_t max, int extra_flags, char **ret) {
        _cleanup_close_ int fd = -1;

        assert(path);
        assert(root);
        assert(ret);

        /* O_NONBLOCK: a FIFO without a writer does not block the open. */
        fd = root_open(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | extra_flags, 0);
        if (fd < 0)
                return fd;
        /* The checks and the bounded read are fileio's, on this very descriptor. */
        return read_regular_fd(fd, max, ret);
}

int root_read_file(const char *root, const char *path, size_t max, char **ret) {
        assert(path);
        assert(ret);

        if (!root_is_set(root))
                return read_full_file(path, max, ret);
        return read_in_root(root, path, max, 0, ret);
}

int root_read_regular_file(const char *root, const char *path, size_t max, char **ret) {
        assert(path);
        assert(ret);

        if (!root_is_set(root))
                return read_regular_file(path, max, ret);
        return read_in_root(root, path, max, O_NOFOLLOW, ret);
}

int root_read_file_typed(const char *root, const char *path, size_t max, char **ret) {
        _cleanup_close_ int pfd = -1, fd = -1;
        char proc[64];
        struct stat st;

        assert(path);
        assert(ret);

        pfd = root_open(root, path, O_PATH, 0);
        if (pfd < 0)
                return pfd;
        if (fstat(pfd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        /* The very inode checked, opened for reading through its descriptor. */
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
        fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        return read_regular_fd(fd, max, ret);
}

/* The host path of an O_PATH fd. */
static int fd_path(int fd, char **ret) {
        char link[64], buf[PATH_MAX];
        ssize_t n;

        assert(ret);

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, buf, sizeof(buf) - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        if (buf[0] != '/' || str_endswith(buf, " (deleted)"))
                return -ENOENT;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int root_resolve(const char *root, const char *path, char **ret) {
        _cleanup_close_ int rootfd = -1;
        _cleanup_free_ char *tail = NULL, *real = NULL, *rel = NULL;
        int r;

        assert(path);
        assert(ret);

        if (!root_is_set(root)) {
                *ret = strdup(path);
                return *ret ? 0 : -ENOMEM;
        }
        rootfd = open_root_dir(root);
        if (rootfd < 0)
                return rootfd;
        {
                _cleanup_close_ int fd = openat2_in_root(rootfd, path, O_PATH, 0);
                if (fd >= 0) {
                        r = fd_path(fd, &real);
                        if (r < 0)
                                return r;
                        *ret = TAKE_PTR(real);
                        return 0;
                }
                if (fd != -ENOENT && fd != -ENOSYS)
                        return fd;
        }

        /* Something does not exist (a file or directory about to be created, maybe
         * behind a dangling link), or no openat2: by hand, which says where the
         * missing part starts. */
        r = resolve_by_hand(rootfd, path, &rel, &tail);
        if (r < 0)
                return r;
        {
                _cleanup_free_ char *abs_root = realpath(root, NULL);
                if (!abs_root)
                        return negative_errno();
                if (asprintf_safe(&real, "%s%s%s", streq(abs_root, "/") ? "" : abs_root, rel[0] ? "/" : "", rel) < 0)
                        return -ENOMEM;
        }
        if (tail) {
                /* Only plain names may follow: nothing to resolve in what does not exist. */
                char *save = NULL;
                for (char *c = strtok_r(tail, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        char *full = NULL;
                        if (streq(c, ".") || streq(c, ".."))
                                return -EINVAL;
                        if (asprintf_safe(&full, "%s/%s", streq(real, "/") ? "" : real, c) < 0)
                                return -ENOMEM;
                        free(real);
                        real = full;
                }
        }
        *ret = TAKE_PTR(real);
        return 0;
}
