/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "cpuset.h"
#include "device.h"
#include "irq-placement.h"
#include "irq.h"
#include "topology.h"

/* Desired CPUs for each of n vectors. Isolated and nohz_full CPUs are never
 * chosen unless the policy names them explicitly (IRQ_PLACEMENT_CPUS). ret is an
 * array of n empty CpuSets, filled on success. -EINVAL if an explicit list has
 * no online CPU. */
int irq_place(const Topology *t, int numa_node, const IrqPolicy *p, const IrqVector *v, size_t n,
              const HwQueue *queues, size_t n_queues, CpuSet *ret);
