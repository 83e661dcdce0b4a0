/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdarg.h>
#include <string.h>

#include "diag.h"
#include "util.h"

void mark_done(Mark *m) {
        assert(m);

        free(m->file);
        m->file = NULL;
}

int mark_copy(Mark *dst, const Mark *src) {
        Mark c = *src;

        assert(dst);
        assert(src);

        c.file = strdup_or_null(src->file);
        if (src->file && !c.file)
                return -ENOMEM;
        mark_done(dst);
        *dst = c;
        return 0;
}

void diag_done(Diag *d) {
        assert(d);

        for (size_t i = 0; i < d->n; i++) {
                mark_done(&d->items[i].mark);
                free(d->items[i].message);
        }
        free(d->items);
        d->items = NULL;
        d->n = 0;
        d->n_dropped = 0;
}

_printf_(4, 0) static int diag_addv(Diag *d, const Mark *m, const char *file, const char *fmt, va_list ap) {
        Diagnostic *n;
        Diagnostic x = {};

        assert(d);
        assert(fmt);

        if (d->n > DIAG_MAX) {
                d->n_dropped++;
                return -EINVAL;
        }
        if (d->n == DIAG_MAX) {
                if (asprintf(&x.message, "too many errors; only the first %u are shown", DIAG_MAX) < 0)
                        return -ENOMEM;
                m = NULL;
                file = NULL;
        } else if (vasprintf(&x.message, fmt, ap) < 0)
                return -ENOMEM;
        if (m) {
                if (mark_copy(&x.mark, m) < 0)
                        goto oom;
        } else if (file) {
                x.mark.file = strdup(file);
                if (!x.mark.file)
                        goto oom;
        }
        n = realloc(d->items, (d->n + 1) * sizeof(Diagnostic));
        if (!n)
                goto oom;
        d->items = n;
        d->items[d->n++] = x;
        return -EINVAL;
oom:
        free(x.message);
        mark_done(&x.mark);
        return -ENOMEM;
}

int diag_add(Diag *d, const Mark *m, const char *fmt, ...) {
        va_list ap;
        int r;

        assert(d);
        assert(fmt);

        va_start(ap, fmt);
        r = diag_addv(d, m, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int diag_add_file(Diag *d, const char *file, const char *fmt, ...) {
        va_list ap;
        int r;

        assert(d);
        assert(fmt);

        va_start(ap, fmt);
        r = diag_addv(d, NULL, file, fmt, ap);
        va_end(ap);
        return r;
}

void diag_print(const Diag *d, FILE *f) {
        assert(d);
        assert(f);

        for (size_t i = 0; i < d->n; i++) {
                const Diagnostic *x = &d->items[i];
                if (x->mark.file && x->mark.line)
                        fprintf(f, "%s:%u:%u: %s\n", x->mark.file, x->mark.line, x->mark.column, x->message);
                else if (x->mark.file)
                        fprintf(f, "%s: %s\n", x->mark.file, x->message);
                else
                        fprintf(f, "%s\n", x->message);
        }
}
