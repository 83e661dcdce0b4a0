/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "hold.h"
#include "macro.h"
#include "util.h"

static int hold_path(const char *dir, const char *disk, char **ret) {
        assert(dir);
        assert(disk);

        /* A kernel name never has a slash or is a dot name; anything else is a bug. */
        if (!*disk || strchr(disk, '/') || disk[0] == '.')
                return -EINVAL;
        *ret = path_join(dir, disk);
        return *ret ? 0 : -ENOMEM;
}

int hold_acquire(const char *dir, const char *disk, pid_t pid, uint64_t until_usec) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        r = hold_path(dir, disk, &path);
        if (r < 0)
                return r;
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        r = asprintf_safe(&text,
                          "# iotunectl tune is measuring this disk: iotuned leaves its knobs alone until\n"
                          "# this file is gone, the deadline (CLOCK_REALTIME, us) has passed or the pid exited.\n"
                          "pid=%d\nuntil_usec=%llu\n",
                          (int) pid, (unsigned long long) until_usec);
        if (r < 0)
                return r;
        return write_file_atomic_full(path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
}

int hold_release(const char *dir, const char *disk) {
        _cleanup_free_ char *path = NULL;
        int r = hold_path(dir, disk, &path);

        if (r < 0)
                return r;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int hold_parse(const char *text, Hold *ret) {
        bool have_pid = false, have_until = false;
        Hold h = {};

        assert(text);
        assert(ret);

        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n");
                char line[64];
                bool comment = p[0] == '#';
                if (!comment && len >= sizeof(line))
                        return -EBADMSG;
                if (!comment)
                        memcpy(line, p, len);
                line[comment ? 0 : len] = 0;
                p += len + (p[len] == '\n');
                if (line[0] == 0)
                        continue;
                if (str_startswith(line, "pid=")) {
                        unsigned pid;
                        if (have_pid || safe_atou(line + 4, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                                return -EBADMSG;
                        h.pid = (pid_t) pid;
                        have_pid = true;
                } else if (str_startswith(line, "until_usec=")) {
                        if (have_until || safe_atou64(line + 11, &h.until_usec) < 0)
                                return -EBADMSG;
                        have_until = true;
                } else
                        return -EBADMSG;
        }
        if (!have_pid || !have_until)
                return -EBADMSG;
        *ret = h;
        return 0;
}

bool hold_any(const char *dir) {
        struct dirent *de;
        DIR *d;

        assert(dir);

        d = opendir(dir);
        if (!d)
                return errno != ENOENT;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        break;
        closedir(d);
        return de != NULL;
}

int hold_check(const char *dir, const char *disk, uint64_t now_usec, Hold *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        Hold h;
        int r;

        r = hold_path(dir, disk, &path);
        if (r < 0)
                return r;
        r = read_regular_file(path, 1024, &text);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = hold_parse(text, &h);
        if (r < 0)
                return r;
        if (h.until_usec > now_usec + HOLD_MAX_USEC)
                return -ERANGE;
        if (h.until_usec <= now_usec)
                return 0;
        if (kill(h.pid, 0) < 0 && errno == ESRCH)
                return 0;
        if (ret)
                *ret = h;
        return 1;
}
