/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the libFuzzer harnesses share: a private scratch directory (the parsers
 * under test read paths, so each input is written to a file there), files written
 * from raw bytes, and an input cut into several files.
 *
 * The scratch directory is $IOTUNED_FUZZ_TMPDIR (tests/fuzz/run-fuzzer.sh and
 * `tools/dev fuzz` point it at a directory they remove afterwards) or /dev/shm,
 * named iotuned-fuzz-<pid>-XXXXXX, created once per process and removed at exit.
 * libFuzzer leaves with _Exit() after a crash, which skips atexit(): a scratch
 * directory whose process is gone is removed by the next harness that starts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *fuzz_scratch;

static int fuzz_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static inline void fuzz_rm_rf(const char *path) {
        (void) nftw(path, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_scratch_remove(void) {
        if (fuzz_scratch)
                fuzz_rm_rf(fuzz_scratch);
}

/* Scratch directories of harness processes that no longer exist (crashed runs). */
static inline void fuzz_reap_stale(const char *base) {
        DIR *dh = opendir(base);
        struct dirent *de;

        if (!dh)
                return;
        while ((de = readdir(dh))) {
                char path[4096];
                int pid, n = 0;
                if (sscanf(de->d_name, "iotuned-fuzz-%d-%*6[A-Za-z0-9]%n", &pid, &n) != 1 || n == 0 ||
                    de->d_name[n] != 0 || pid <= 0 || pid == getpid())
                        continue;
                if (kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                fuzz_rm_rf(path);
        }
        closedir(dh);
}

static inline const char *fuzz_scratch_dir(void) {
        const char *base;

        if (fuzz_scratch)
                return fuzz_scratch;
        base = getenv("IOTUNED_FUZZ_TMPDIR");
        if (!base || !*base)
                base = "/dev/shm";
        fuzz_reap_stale(base);
        if (asprintf(&fuzz_scratch, "%s/iotuned-fuzz-%d-XXXXXX", base, (int) getpid()) < 0 || !mkdtemp(fuzz_scratch)) {
                fprintf(stderr, "fuzz: cannot create a scratch directory under %s: %m\n", base);
                abort();
        }
        atexit(fuzz_scratch_remove);
        return fuzz_scratch;
}

/* "<scratch>/<rel>"; the caller frees it. */
static inline char *fuzz_path(const char *rel) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", fuzz_scratch_dir(), rel) < 0)
                abort();
        return p;
}

/* mkdir -p of a directory below the scratch directory. */
static inline void fuzz_mkdir(const char *rel) {
        char *p = fuzz_path(rel);
        for (char *s = p + strlen(fuzz_scratch_dir()) + 1;; s++) {
                char c = *s;
                if (c != '/' && c != 0)
                        continue;
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "fuzz: mkdir %s: %m\n", p);
                        abort();
                }
                *s = c;
                if (!c)
                        break;
        }
        free(p);
}

/* Replace the file at `path` with exactly these bytes. */
static inline void fuzz_write_file(const char *path, const void *data, size_t size) {
        const char *d = data;
        int fd;

        (void) unlink(path); /* it may be a symbolic link from the previous input */
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
                fprintf(stderr, "fuzz: cannot write %s: %m\n", path);
                abort();
        }
        while (size > 0) {
                ssize_t n = write(fd, d, size);
                if (n <= 0) {
                        fprintf(stderr, "fuzz: write %s: %m\n", path);
                        abort();
                }
                d += n;
                size -= (size_t) n;
        }
        close(fd);
}

/* A NUL-terminated copy of the input, for the parsers that take a string. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/* An input holding several files: they are separated by lines that are exactly
 * "%%" (the separator line's own newline is dropped; the newline before it stays
 * with the file above). Returns the number of pieces (at most max). */
typedef struct FuzzPiece {
        const uint8_t *data;
        size_t size;
} FuzzPiece;

static inline size_t fuzz_split(const uint8_t *data, size_t size, FuzzPiece *pieces, size_t max) {
        size_t n = 0, start = 0;

        if (max == 0)
                return 0;
        for (size_t i = 0; i + 3 <= size && n + 1 < max; i++)
                if ((i == 0 || data[i - 1] == '\n') && data[i] == '%' && data[i + 1] == '%' && data[i + 2] == '\n') {
                        pieces[n++] = (FuzzPiece) { data + start, i - start };
                        start = i + 3;
                        i += 2;
                }
        pieces[n++] = (FuzzPiece) { data + start, size - start };
        return n;
}
