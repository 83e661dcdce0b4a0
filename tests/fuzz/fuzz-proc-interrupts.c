/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irq_table_parse() and irq_table_load(): /proc/interrupts, as the planner
 * reads it to name vectors, then what the planner does with each name
 * (irq_classify, irq_table_name). The table must come out sorted by IRQ, without
 * repeats, in range, and the same from the file as from the text. */
#include "fuzz-util.h"
#include "irq-counts.h"
#include "irq.h"

static void check(const IrqTable *t) {
        for (size_t i = 0; i < t->n; i++) {
                int queue;
                IrqManaged managed;
                if (!t->items[i].name || !*t->items[i].name)
                        abort(); /* names_of() keeps only non-empty names */
                if (t->items[i].irq > IRQ_NUMBER_MAX || (i > 0 && t->items[i - 1].irq >= t->items[i].irq))
                        abort();
                if (irq_table_name(t, t->items[i].irq) != t->items[i].name)
                        abort();
                irq_classify(t->items[i].name, &queue, &managed);
        }
}

/* irq_counts_parse(): columns ascending and in range, rows sorted, unique, in
 * range, found by lookup; a chosen subset is the same rows with the same counts. */
static void check_counts(const IrqCounts *c) {
        if (c->n_cpus == 0 || c->n_cpus > IRQ_TABLE_CPU_MAX)
                abort();
        for (unsigned j = 0; j < c->n_cpus; j++)
                if (c->cpu_ids[j] < 0 || c->cpu_ids[j] >= IRQ_TABLE_CPU_MAX ||
                    (j > 0 && c->cpu_ids[j - 1] >= c->cpu_ids[j]) || irq_counts_column(c, c->cpu_ids[j]) != (int) j)
                        abort();
        for (size_t i = 0; i < c->n; i++)
                if (c->items[i].irq > IRQ_NUMBER_MAX || (i > 0 && c->items[i - 1].irq >= c->items[i].irq) ||
                    irq_counts_find(c, c->items[i].irq) != &c->items[i])
                        abort();
}

static void fuzz_counts(const uint8_t *data, size_t size) {
        IrqCounts all = {}, some = {};
        unsigned want[2];
        char *text = fuzz_strndup(data, size);

        if (irq_counts_parse(text, NULL, 0, &all) == 0) {
                check_counts(&all);
                if (all.n > 0) {
                        want[0] = all.items[all.n - 1].irq;
                        want[1] = all.items[0].irq;
                        if (irq_counts_parse(text, want, 2, &some) != 0)
                                abort();
                        check_counts(&some);
                        if (some.n != (all.n > 1 ? 2u : 1u) || some.n_cpus != all.n_cpus ||
                            memcmp(some.items[0].per_cpu, all.items[0].per_cpu, all.n_cpus * sizeof(uint64_t)) != 0)
                                abort();
                        irq_counts_done(&some);
                }
                irq_counts_done(&all);
        }
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *path;
        IrqTable t = {}, f = {};
        char *text;
        int r, q;

        if (size > 1u << 20)
                return 0;
        fuzz_counts(data, size);
        text = fuzz_strndup(data, size);
        r = irq_table_parse(text, &t);
        free(text);
        if (r == 0)
                check(&t);

        if (!path)
                path = fuzz_path("interrupts");
        fuzz_write_file(path, data, size);
        q = irq_table_load(path, &f);
        if (q == 0) {
                check(&f);
                /* The file is the text up to its first NUL, less trailing newlines. */
                if (!memchr(data, 0, size) && (r != 0 || f.n != t.n))
                        abort();
        }
        irq_table_done(&t);
        irq_table_done(&f);
        return 0;
}
