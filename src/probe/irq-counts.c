/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "irq-counts.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* A row while parsing: its IRQ and its slot in the block of counts (also its order in the file). */
typedef struct Row {
        unsigned irq;
        size_t slot;
} Row;

typedef struct Parser {
        int *cpu_ids;
        unsigned n_cpus;
        unsigned *wanted; /* sorted; NULL: every row */
        size_t n_wanted;
        Row *rows;
        size_t n_rows, allocated;
        uint64_t *storage;
} Parser;

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static const char *skip_blanks(const char *p, const char *e) {
        while (p < e && is_blank(*p))
                p++;
        return p;
}

/* Digits at *p (before e), at most `max`, no leading zeros beyond "0". *p is moved
 * past the digits. -EINVAL with no digit or a leading zero, -ERANGE above max. */
static int parse_bounded(const char **p, const char *e, uint64_t max, bool leading_zeros, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        bool range = false;

        assert(p);
        assert(e);
        assert(ret);

        if (s >= e || !is_digit(*s))
                return -EINVAL;
        if (!leading_zeros && s[0] == '0' && s + 1 < e && is_digit(s[1]))
                return -EINVAL;
        for (; s < e && is_digit(*s); s++) {
                unsigned d = (unsigned) (*s - '0');
                if (range || v > (max - d) / 10)
                        range = true; /* keep walking to the end of the digits */
                else
                        v = v * 10 + d;
        }
        *p = s;
        if (range)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* The header "           CPU0       CPU2       " (kernel/irq/proc.c prints one
 * "CPU%-8d" per online CPU, ascending). */
static int parse_header(const char *p, const char *e, Parser *ps) {
        const char *s;
        unsigned n = 0;

        assert(ps);

        /* First pass: validate and count, so the allocation is the exact size. */
        for (s = skip_blanks(p, e); s < e; s = skip_blanks(s, e)) {
                uint64_t id;
                if (n == IRQ_TABLE_CPU_MAX)
                        return -E2BIG;
                if (e - s < 3 || memcmp(s, "CPU", 3) != 0)
                        return -EBADMSG;
                s += 3;
                if (parse_bounded(&s, e, IRQ_TABLE_CPU_MAX - 1, false, &id) < 0 || (s < e && !is_blank(*s)))
                        return -EBADMSG;
                n++;
        }
        if (n == 0)
                return -EBADMSG;

        ps->cpu_ids = calloc(n, sizeof(int));
        if (!ps->cpu_ids)
                return -ENOMEM;
        n = 0;
        for (s = skip_blanks(p, e); s < e; s = skip_blanks(s, e)) {
                uint64_t id;
                s += 3;
                (void) parse_bounded(&s, e, IRQ_TABLE_CPU_MAX - 1, false, &id);
                if (n > 0 && (int) id <= ps->cpu_ids[n - 1]) {
                        free(ps->cpu_ids);
                        ps->cpu_ids = NULL;
                        return -EBADMSG;
                }
                ps->cpu_ids[n++] = (int) id;
        }
        ps->n_cpus = n;
        return 0;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

static bool wanted(const Parser *ps, unsigned irq) {
        return !ps->wanted || bsearch(&irq, ps->wanted, ps->n_wanted, sizeof(unsigned), cmp_unsigned);
}

static int grow(Parser *ps) {
        size_t want;
        Row *rows;
        uint64_t *storage;

        if (ps->n_rows < ps->allocated)
                return 0;
        want = MAX(ps->allocated * 2, (size_t) 16);
        rows = reallocarray(ps->rows, want, sizeof(Row));
        if (!rows)
                return -ENOMEM;
        ps->rows = rows;
        storage = reallocarray(ps->storage, want, (size_t) ps->n_cpus * sizeof(uint64_t));
        if (!storage)
                return -ENOMEM;
        ps->storage = storage;
        ps->allocated = want;
        return 0;
}

/* One row "<irq>: <count> <count> ... <chip> <names>" at [p, e). 0 when kept or
 * skipped, -ENOMEM. */
static int parse_row(const char *p, const char *e, Parser *ps) {
        uint64_t irq, *counts;
        int r;

        assert(ps);

        r = parse_bounded(&p, e, IRQ_NUMBER_MAX, false, &irq);
        if (r < 0 || p >= e || *p != ':') {
                if (r == -ERANGE)
                        log_debug("/proc/interrupts: IRQ number above %u, row skipped.", IRQ_NUMBER_MAX);
                return 0;
        }
        p++;
        if (!wanted(ps, (unsigned) irq))
                return 0;
        r = grow(ps);
        if (r < 0)
                return r;
        counts = ps->storage + ps->n_rows * ps->n_cpus;
        for (unsigned c = 0; c < ps->n_cpus; c++) {
                const char *before = p;
                p = skip_blanks(p, e);
                if (c > 0 && p == before)
                        return 0; /* "12 34" needs the blank; "1234x" is no count */
                r = parse_bounded(&p, e, UINT64_MAX, true, &counts[c]);
                if (r == -ERANGE) {
                        log_debug("/proc/interrupts: IRQ %u has a count beyond 64 bits, row skipped.", (unsigned) irq);
                        return 0;
                }
                if (r < 0 || (p < e && !is_blank(*p))) {
                        log_debug("/proc/interrupts: IRQ %u has %u of %u counts, row skipped.", (unsigned) irq, c,
                                  ps->n_cpus);
                        return 0;
                }
        }
        ps->rows[ps->n_rows] = (Row){.irq = (unsigned) irq, .slot = ps->n_rows};
        ps->n_rows++;
        return 0;
}

static int cmp_row(const void *a, const void *b) {
        const Row *x = a, *y = b;
        if (x->irq != y->irq)
                return x->irq < y->irq ? -1 : 1;
        return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static void parser_done(Parser *ps) {
        free(ps->cpu_ids);
        free(ps->wanted);
        free(ps->rows);
        free(ps->storage);
        *ps = (Parser){};
}

/* Sorted by IRQ, the first row of a repeated IRQ kept. */
static int parser_finish(Parser *ps, IrqCounts *ret) {
        IrqCount *items = NULL;
        size_t n = 0;

        if (ps->n_rows > 0) {
                qsort(ps->rows, ps->n_rows, sizeof(Row), cmp_row);
                items = calloc(ps->n_rows, sizeof(IrqCount));
                if (!items)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n_rows; i++) {
                        if (n > 0 && items[n - 1].irq == ps->rows[i].irq) {
                                log_debug("/proc/interrupts: IRQ %u listed twice, the later row skipped.",
                                          ps->rows[i].irq);
                                continue;
                        }
                        items[n++] = (IrqCount){
                                .irq = ps->rows[i].irq,
                                .per_cpu = ps->storage + ps->rows[i].slot * ps->n_cpus,
                        };
                }
        }
        *ret = (IrqCounts){
                .n_cpus = ps->n_cpus,
                .cpu_ids = TAKE_PTR(ps->cpu_ids),
                .items = items,
                .n = n,
                .storage = TAKE_PTR(ps->storage),
        };
        return 0;
}

int irq_counts_parse(const char *text, const unsigned *irqs, size_t n_irqs, IrqCounts *ret) {
        Parser ps = {};
        const char *line, *next;
        bool header = false;
        int r = 0;

        assert(text);
        assert(irqs || n_irqs == 0);
        assert(ret);

        if (n_irqs > 0) {
                ps.wanted = calloc(n_irqs, sizeof(unsigned));
                if (!ps.wanted)
                        return -ENOMEM;
                memcpy(ps.wanted, irqs, n_irqs * sizeof(unsigned));
                qsort(ps.wanted, n_irqs, sizeof(unsigned), cmp_unsigned);
                ps.n_wanted = n_irqs;
        }

        for (line = text; *line; line = next) {
                const char *e = strchr(line, '\n'), *p;

                next = e ? e + 1 : line + strlen(line);
                if (!e)
                        e = next;
                if ((size_t) (e - line) > IRQ_TABLE_LINE_MAX) {
                        log_debug("/proc/interrupts: a line of %zu bytes, skipped.", (size_t) (e - line));
                        continue;
                }
                p = skip_blanks(line, e);
                if (e - p >= 3 && memcmp(p, "CPU", 3) == 0) {
                        if (header) {
                                log_debug("/proc/interrupts: a second CPU header, skipped.");
                                continue;
                        }
                        r = parse_header(p, e, &ps);
                        if (r < 0)
                                goto finish;
                        header = true;
                        continue;
                }
                if (!header || p >= e || !is_digit(*p))
                        continue; /* NMI:, LOC:, ERR:, rows before the header */
                r = parse_row(p, e, &ps);
                if (r < 0)
                        goto finish;
        }
        if (!header) {
                r = -EBADMSG;
                goto finish;
        }
        r = parser_finish(&ps, ret);
finish:
        parser_done(&ps);
        return r;
}

int irq_counts_load(const char *path, const unsigned *irqs, size_t n_irqs, IrqCounts *ret) {
        _cleanup_free_ char *text = NULL;
        IrqCounts c;
        int r;

        assert(path);
        assert(ret);

        r = read_full_file(path, IRQ_TABLE_FILE_MAX, &text);
        if (r < 0)
                return r;
        r = irq_counts_parse(text, irqs, n_irqs, &c);
        if (r < 0)
                return r;
        c.sampled_usec = now_usec(CLOCK_MONOTONIC);
        *ret = c;
        return 0;
}

void irq_counts_done(IrqCounts *c) {
        assert(c);

        free(c->cpu_ids);
        free(c->items);
        free(c->storage);
        *c = (IrqCounts){};
}

static int cmp_count(const void *a, const void *b) {
        const IrqCount *x = a, *y = b;
        return x->irq < y->irq ? -1 : x->irq > y->irq;
}

const IrqCount *irq_counts_find(const IrqCounts *c, unsigned irq) {
        IrqCount key = {.irq = irq};

        assert(c);

        if (c->n == 0)
                return NULL;
        return bsearch(&key, c->items, c->n, sizeof(IrqCount), cmp_count);
}

int irq_counts_column(const IrqCounts *c, int cpu) {
        size_t lo = 0, hi;

        assert(c);

        /* The columns are ascending (checked by the parser). */
        for (hi = c->n_cpus; lo < hi;) {
                size_t mid = lo + (hi - lo) / 2;
                if (c->cpu_ids[mid] == cpu)
                        return (int) mid;
                if (c->cpu_ids[mid] < cpu)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -ENOENT;
}
