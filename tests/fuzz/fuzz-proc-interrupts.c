/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irq_table_load(): /proc/interrupts, as the planner reads it to name vectors,
 * then what the planner does with each name (irq_classify, irq_table_name). */
#include "fuzz-util.h"
#include "irq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *path;
        IrqTable t = {};

        if (!path)
                path = fuzz_path("interrupts");
        fuzz_write_file(path, data, size);
        if (irq_table_load(path, &t) < 0)
                return 0;
        for (size_t i = 0; i < t.n; i++) {
                int queue;
                IrqManaged managed;
                if (!t.items[i].name || !*t.items[i].name)
                        abort(); /* names_of() keeps only non-empty names */
                if (!irq_table_name(&t, t.items[i].irq))
                        abort();
                irq_classify(t.items[i].name, &queue, &managed);
        }
        irq_table_done(&t);
        return 0;
}
