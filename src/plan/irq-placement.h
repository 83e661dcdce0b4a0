/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "cpuset.h"
#include "device.h"
#include "diag.h"
#include "irq.h"
#include "topology.h"

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

/* Desired CPUs for each of n vectors. Isolated and nohz_full CPUs are never
 * chosen unless the policy names them explicitly (IRQ_PLACEMENT_CPUS). ret is an
 * array of n empty CpuSets, filled on success. -EINVAL if an explicit list has
 * no online CPU. */
int irq_place(const Topology *t, int numa_node, const IrqPolicy *p, const IrqVector *v, size_t n,
              const HwQueue *queues, size_t n_queues, CpuSet *ret);
