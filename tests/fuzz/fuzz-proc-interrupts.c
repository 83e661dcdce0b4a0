/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irq_table_parse() and irq_table_load(): /proc/interrupts, as the planner
 * reads it to name vectors, then what the planner does with each name
 * (irq_classify, irq_table_name). The table must come out sorted by IRQ, without
 * repeats, in range, and the same from the file as from the text. */
#include "fuzz-util.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *path;
        IrqTable t = {}, f = {};
        char *text;
        int r, q;

        if (size > 1u << 20)
                return 0;
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
