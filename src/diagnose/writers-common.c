/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writers: the list, and the helpers the scans share. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "util.h"
#include "writers-internal.h"

static void writer_done(Writer *w) {
        free(w->who);
        free(w->knob);
        free(w->value);
        free(w->source);
        free(w->why);
}

void writer_list_done(WriterList *l) {
        assert(l);

        for (size_t i = 0; i < l->n; i++)
                writer_done(&l->items[i]);
        free(l->items);
        *l = (WriterList){};
}

/* Append a copy of *w (its strings copied). -ENOMEM. */
int writer_add(WriterList *l, const Writer *w) {
        Writer c = *w, *items;

        assert(l);
        assert(w->who && w->knob);

        c.who = strdup(w->who);
        c.knob = strdup(w->knob);
        c.value = strdup_or_null(w->value);
        c.source = strdup_or_null(w->source);
        c.why = strdup_or_null(w->why);
        if (!c.who || !c.knob || (w->value && !c.value) || (w->source && !c.source) || (w->why && !c.why)) {
                writer_done(&c);
                return -ENOMEM;
        }
        items = realloc(l->items, (l->n + 1) * sizeof(Writer));
        if (!items) {
                writer_done(&c);
                return -ENOMEM;
        }
        l->items = items;
        l->items[l->n++] = c;
        return 0;
}

/* Append to a "; "-separated text. -ENOMEM. */
int writers_text_append(char **s, const char *fmt, ...) {
        _cleanup_free_ char *piece = NULL;
        char *joined;
        va_list ap;
        int r;

        assert(s);

        va_start(ap, fmt);
        r = vasprintf(&piece, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (!*s) {
                *s = TAKE_PTR(piece);
                return 0;
        }
        if (asprintf_safe(&joined, "%s; %s", *s, piece) < 0)
                return -ENOMEM;
        free(*s);
        *s = joined;
        return 0;
}

/* The DEVPATH udev would see: d->syspath from its /devices/ on, or NULL. */
const char *writers_devpath_of(const char *syspath) {
        const char *p = strstr(syspath, "/sys/devices/");
        return p ? p + 4 : NULL;
}
