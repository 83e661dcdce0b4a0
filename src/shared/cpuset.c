/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cpuset.h"
#include "macro.h"
#include "util.h"

#define WORD_BITS (sizeof(unsigned long) * CHAR_BIT)
/* Linux's NR_CPUS tops out at 8192 today; refuse anything absurd rather than
 * allocate on a typo like "0-4000000000". */
#define CPUSET_MAX_CPU 65535u

void cpuset_done(CpuSet *s) {
        assert(s);

        free(s->bits);
        s->bits = NULL;
        s->n_words = 0;
}

int cpuset_add(CpuSet *s, unsigned cpu) {
        size_t w = cpu / WORD_BITS;

        assert(s);

        if (cpu > CPUSET_MAX_CPU)
                return -ERANGE;
        if (w >= s->n_words) {
                unsigned long *n = realloc(s->bits, (w + 1) * sizeof(unsigned long));
                if (!n)
                        return -ENOMEM;
                memset(n + s->n_words, 0, (w + 1 - s->n_words) * sizeof(unsigned long));
                s->bits = n;
                s->n_words = w + 1;
        }
        s->bits[w] |= 1UL << (cpu % WORD_BITS);
        return 0;
}

bool cpuset_contains(const CpuSet *s, unsigned cpu) {
        size_t w = cpu / WORD_BITS;

        assert(s);

        return w < s->n_words && (s->bits[w] & (1UL << (cpu % WORD_BITS)));
}

size_t cpuset_count(const CpuSet *s) {
        size_t n = 0;

        assert(s);

        for (size_t i = 0; i < s->n_words; i++)
                n += __builtin_popcountl(s->bits[i]);
        return n;
}

unsigned cpuset_span(const CpuSet *s) {
        assert(s);

        for (size_t i = s->n_words; i > 0; i--)
                if (s->bits[i - 1])
                        return (unsigned) ((i - 1) * WORD_BITS + (WORD_BITS - __builtin_clzl(s->bits[i - 1])));
        return 0;
}

int cpuset_or(CpuSet *dst, const CpuSet *src) {
        assert(dst);
        assert(src);

        if (src->n_words > dst->n_words) {
                unsigned long *n = realloc(dst->bits, src->n_words * sizeof(unsigned long));
                if (!n)
                        return -ENOMEM;
                memset(n + dst->n_words, 0, (src->n_words - dst->n_words) * sizeof(unsigned long));
                dst->bits = n;
                dst->n_words = src->n_words;
        }
        for (size_t i = 0; i < src->n_words; i++)
                dst->bits[i] |= src->bits[i];
        return 0;
}

bool cpuset_intersects(const CpuSet *a, const CpuSet *b) {
        size_t n;

        assert(a);
        assert(b);

        n = MIN(a->n_words, b->n_words);
        for (size_t i = 0; i < n; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

bool cpuset_equal(const CpuSet *a, const CpuSet *b) {
        size_t n = MAX(a->n_words, b->n_words);

        assert(a);
        assert(b);

        for (size_t i = 0; i < n; i++) {
                unsigned long x = i < a->n_words ? a->bits[i] : 0;
                unsigned long y = i < b->n_words ? b->bits[i] : 0;
                if (x != y)
                        return false;
        }
        return true;
}

int cpuset_copy(CpuSet *dst, const CpuSet *src) {
        CpuSet c = {};

        assert(dst);
        assert(src);

        if (src->n_words) {
                c.bits = malloc(src->n_words * sizeof(unsigned long));
                if (!c.bits)
                        return -ENOMEM;
                memcpy(c.bits, src->bits, src->n_words * sizeof(unsigned long));
                c.n_words = src->n_words;
        }
        cpuset_done(dst);
        *dst = c;
        return 0;
}

static int parse_cpu(const char **p, unsigned *ret) {
        unsigned long v;
        char *end;

        assert(p);
        assert(*p);
        assert(ret);

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno == ERANGE || v > CPUSET_MAX_CPU)
                return -ERANGE;
        *p = end;
        *ret = (unsigned) v;
        return 0;
}

int cpuset_parse(const char *s, CpuSet *ret) {
        CpuSet c = {};
        const char *p = s;
        int r;

        assert(s);
        assert(ret);

        for (;;) {
                unsigned a, b;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == 0 || (*p == '\n' && p[1] == 0))
                        break;
                r = parse_cpu(&p, &a); /* a newline before the end fails here */
                if (r < 0)
                        goto fail;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_cpu(&p, &b);
                        if (r < 0)
                                goto fail;
                        if (b < a) {
                                r = -EINVAL;
                                goto fail;
                        }
                }
                for (unsigned cpu = a; cpu <= b; cpu++) {
                        r = cpuset_add(&c, cpu);
                        if (r < 0)
                                goto fail;
                }
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == ',') {
                        p++;
                        /* A trailing comma is a typo, not an empty element. */
                        while (*p == ' ' || *p == '\t')
                                p++;
                        if (*p == 0 || *p == '\n') {
                                r = -EINVAL;
                                goto fail;
                        }
                        continue;
                }
                if (*p == '\n' && p[1] == 0)
                        break;
                if (*p != 0) {
                        r = -EINVAL;
                        goto fail;
                }
        }
        cpuset_done(ret);
        *ret = c;
        return 0;
fail:
        cpuset_done(&c);
        return r;
}

int cpuset_format(const CpuSet *s, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        unsigned span;
        bool first = true;

        assert(s);
        assert(ret);

        f = open_memstream(&buf, &size);
        span = cpuset_span(s);
        if (!f)
                return -ENOMEM;
        for (unsigned i = 0; i < span; i++) {
                unsigned j;
                if (!cpuset_contains(s, i))
                        continue;
                for (j = i; j + 1 < span && cpuset_contains(s, j + 1); j++)
                        ;
                if (j == i)
                        fprintf(f, "%s%u", first ? "" : ",", i);
                else
                        fprintf(f, "%s%u-%u", first ? "" : ",", i, j);
                first = false;
                i = j;
        }
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}
