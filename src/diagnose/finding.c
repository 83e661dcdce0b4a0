/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "finding.h"
#include "util.h"

static const char *const severity_names[_FINDING_SEVERITY_MAX] = {
        [FINDING_INFO] = "info",
        [FINDING_NOTICE] = "notice",
        [FINDING_WARNING] = "warning",
        [FINDING_CRITICAL] = "critical",
};

const char *finding_severity_to_string(FindingSeverity s) {
        return s >= 0 && s < _FINDING_SEVERITY_MAX ? severity_names[s] : "?";
}

static void finding_done(Finding *f) {
        free(f->device);
        free(f->kind);
        free(f->knob);
        free(f->summary);
        free(f->source);
        for (size_t i = 0; i < f->n_values; i++)
                free(f->values[i].name);
        free(f->values);
}

void finding_list_done(FindingList *l) {
        assert(l);

        for (size_t i = 0; i < l->n; i++)
                finding_done(&l->items[i]);
        free(l->items);
        *l = (FindingList){};
}

Finding *finding_add(FindingList *l, const char *device, const char *kind, FindingSeverity severity, const char *knob,
                     const char *source, const char *fmt, ...) {
        Finding f = {.severity = severity}, *items;
        va_list ap;
        int r;

        assert(l);
        assert(device);
        assert(kind);
        assert(fmt);

        va_start(ap, fmt);
        r = vasprintf(&f.summary, fmt, ap);
        va_end(ap);
        if (r < 0)
                return NULL;
        f.device = strdup(device);
        f.kind = strdup(kind);
        f.knob = knob ? strdup(knob) : NULL;
        f.source = source ? strdup(source) : NULL;
        items = realloc(l->items, (l->n + 1) * sizeof(Finding));
        if (!f.device || !f.kind || (knob && !f.knob) || (source && !f.source) || !items) {
                if (items)
                        l->items = items;
                finding_done(&f);
                return NULL;
        }
        l->items = items;
        l->items[l->n] = f;
        return &l->items[l->n++];
}

int finding_value(Finding *f, const char *name, double value) {
        FindingValue *v;
        char *n;

        assert(f);
        assert(name);

        n = strdup(name);
        if (!n)
                return -ENOMEM;
        v = realloc(f->values, (f->n_values + 1) * sizeof(FindingValue));
        if (!v) {
                free(n);
                return -ENOMEM;
        }
        f->values = v;
        f->values[f->n_values++] = (FindingValue){.name = n, .value = value};
        return 0;
}

void finding_list_sort(FindingList *l) {
        assert(l);

        for (size_t i = 1; i < l->n; i++) {
                Finding f = l->items[i];
                size_t j = i;
                for (; j > 0 && l->items[j - 1].severity < f.severity; j--)
                        l->items[j] = l->items[j - 1];
                l->items[j] = f;
        }
}

FindingSeverity finding_list_worst(const FindingList *l) {
        FindingSeverity w = FINDING_INFO;

        assert(l);

        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].severity > w)
                        w = l->items[i].severity;
        return w;
}
