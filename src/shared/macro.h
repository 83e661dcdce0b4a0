/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The few cleanup helpers iotuned needs. libsystemd does not export systemd's own
 * macro.h, so this is a deliberately tiny subset of the same idioms. */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define STRINGIFY(x) #x
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static inline void freep(void *p) {
        assert(p);
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        assert(fd);
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        assert(f);
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand ownership of a pointer out of a _cleanup_ variable. */
#define TAKE_PTR(p)                               \
        ({                                        \
                __typeof__(p) _ptr_ = (p);        \
                (p) = NULL;                       \
                _ptr_;                            \
        })

#define TAKE_FD(fd)                               \
        ({                                        \
                int _fd_ = (fd);                  \
                (fd) = -1;                        \
                _fd_;                             \
        })

/* Define a NULL-safe freep-style helper for a type with a NULL-safe free function. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)           \
        static inline void func##p(type *p) {             \
                assert(p);                                \
                if (*p)                                   \
                        func(*p);                         \
        }

static inline int negative_errno(void) {
        /* errno is always positive after a failure; guard against callers that
         * forgot to set it so we never return 0 for an error. */
        return errno > 0 ? -errno : -EIO;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
/* Both NULL, or equal strings. */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || !(s)[0])
