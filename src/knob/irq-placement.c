/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <string.h>

#include "irq-placement.h"
#include "util.h"

static const char *const placement_names[_IRQ_PLACEMENT_MAX] = {
        [IRQ_PLACEMENT_UNSET] = NULL,
        [IRQ_PLACEMENT_LEAVE] = "leave",
        [IRQ_PLACEMENT_QUEUE_LOCAL] = "queue-local",
        [IRQ_PLACEMENT_NODE_LOCAL] = "node-local",
        [IRQ_PLACEMENT_SPREAD] = "spread",
        [IRQ_PLACEMENT_CPUS] = "cpus",
};

const char *irq_placement_to_string(IrqPlacement p) {
        return p > 0 && p < _IRQ_PLACEMENT_MAX ? placement_names[p] : "unset";
}

IrqPlacement irq_placement_from_string(const char *s) {
        assert(s);

        for (int i = 1; i < _IRQ_PLACEMENT_MAX; i++)
                if (streq(placement_names[i], s))
                        return (IrqPlacement) i;
        return IRQ_PLACEMENT_UNSET;
}

void irq_policy_done(IrqPolicy *p) {
        assert(p);

        free(p->cpus);
        mark_done(&p->origin);
        *p = (IrqPolicy) { .keep_irqbalance_away = -1 };
}

int irq_policy_copy(IrqPolicy *dst, const IrqPolicy *src) {
        IrqPolicy c = *src;

        assert(dst);
        assert(src);

        c.cpus = strdup_or_null(src->cpus);
        c.origin = (Mark) {};
        if ((src->cpus && !c.cpus) || mark_copy(&c.origin, &src->origin) < 0) {
                free(c.cpus);
                return -ENOMEM;
        }
        irq_policy_done(dst);
        *dst = c;
        return 0;
}
