/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Scratch configuration trees for tests: a temp dir and a file writer that
 * creates parent directories. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "util.h"

static inline char *tmpdir_new(void) {
        char *t = strdup("/tmp/iotuned-test-XXXXXX");
        if (!t || !mkdtemp(t))
                abort();
        return t;
}

static inline void tmpdir_write(const char *dir, const char *rel, const char *text) {
        char *p = path_join(dir, rel), *slash;
        FILE *f;
        if (!p)
                abort();
        slash = strrchr(p, '/');
        *slash = 0;
        if (mkdir_p(p, 0755) < 0)
                abort();
        *slash = '/';
        f = fopen(p, "we");
        if (!f)
                abort();
        fputs(text, f);
        fclose(f);
        free(p);
}

static inline void tmpdir_symlink(const char *dir, const char *rel, const char *target) {
        char *p = path_join(dir, rel), *slash;
        if (!p)
                abort();
        slash = strrchr(p, '/');
        *slash = 0;
        if (mkdir_p(p, 0755) < 0)
                abort();
        *slash = '/';
        if (symlink(target, p) < 0)
                abort();
        free(p);
}

static inline void tmpdir_remove(char *dir) {
        char *cmd = NULL;
        if (asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
                fprintf(stderr, "# could not remove %s\n", dir);
        free(cmd);
        free(dir);
}
