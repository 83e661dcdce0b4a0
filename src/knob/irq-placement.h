/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "diag.h"

/* The profile's irq: section, as configuration reads it: where interrupt vectors
 * go. irq-place.h (plan) turns a policy into CPUs per vector. */
typedef enum IrqPlacement {
        IRQ_PLACEMENT_UNSET,
        IRQ_PLACEMENT_LEAVE,        /* do not touch */
        IRQ_PLACEMENT_QUEUE_LOCAL,  /* each queue's vector on the CPUs its hardware queue serves */
        IRQ_PLACEMENT_NODE_LOCAL,   /* vectors spread one CPU each over the device's NUMA node */
        IRQ_PLACEMENT_SPREAD,       /* vectors spread one CPU each over all allowed CPUs */
        IRQ_PLACEMENT_CPUS,         /* every vector on an explicit cpulist */
        _IRQ_PLACEMENT_MAX,
} IrqPlacement;

const char *irq_placement_to_string(IrqPlacement p);
IrqPlacement irq_placement_from_string(const char *s);

typedef struct IrqPolicy {
        IrqPlacement placement;
        char *cpus;                /* canonical cpulist, IRQ_PLACEMENT_CPUS only */
        int keep_irqbalance_away;  /* -1 unset */
        Mark origin;               /* where `placement` (or `cpus`) was written */
} IrqPolicy;

void irq_policy_done(IrqPolicy *p);
int irq_policy_copy(IrqPolicy *dst, const IrqPolicy *src);
