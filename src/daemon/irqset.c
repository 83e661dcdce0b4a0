/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqset.h"
#include "util.h"

bool irqset_contains(const unsigned *a, size_t n, unsigned v) {
        assert(a || n == 0);

        for (size_t i = 0; i < n; i++)
                if (a[i] == v)
                        return true;
        return false;
}

int irqset_add(unsigned **a, size_t *n, unsigned v) {
        unsigned *x;

        assert(a);
        assert(n);

        if (irqset_contains(*a, *n, v))
                return 0;
        x = realloc(*a, (*n + 1) * sizeof(unsigned));
        if (!x)
                return -ENOMEM;
        *a = x;
        x[(*n)++] = v;
        return 0;
}

bool irqset_equal(const unsigned *a, size_t na, const unsigned *b, size_t nb) {
        assert(a || na == 0);
        assert(b || nb == 0);

        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!irqset_contains(b, nb, a[i]))
                        return false;
        return true;
}

int irqset_copy(const unsigned *a, size_t n, unsigned **ret) {
        unsigned *copy = NULL;

        assert(a || n == 0);
        assert(ret);

        if (n) {
                copy = malloc(n * sizeof(unsigned));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, a, n * sizeof(unsigned));
        }
        *ret = copy;
        return 0;
}

static int cmp_irq(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

void irqset_sort(unsigned *a, size_t n) {
        assert(a || n == 0);

        if (n)
                qsort(a, n, sizeof(unsigned), cmp_irq);
}

char *irqset_format(const unsigned *a, size_t n) {
        _cleanup_free_ unsigned *sorted = NULL;
        size_t len = 0;
        char *s;

        assert(a || n == 0);

        if (irqset_copy(a, n, &sorted) < 0)
                return NULL;
        s = malloc(n * 11 + 1); /* "4294967295 " */
        if (!s)
                return NULL;
        irqset_sort(sorted, n);
        s[0] = 0;
        for (size_t i = 0; i < n; i++)
                len += sprintf(s + len, "%s%u", i ? " " : "", sorted[i]);
        return s;
}
