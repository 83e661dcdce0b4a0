/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "cpuset.h"

/* CPUs and NUMA nodes as IRQ placement needs them. Built from libnuma and
 * /sys/devices/system/cpu on a real system; tests build it by hand. */
typedef struct Topology {
        CpuSet online;
        CpuSet isolated;    /* isolcpus= (never a target unless named explicitly) */
        CpuSet nohz_full;   /* nohz_full= (likewise) */
        CpuSet *node_cpus;  /* indexed by node number; empty for absent nodes */
        unsigned n_nodes;
} Topology;

void topology_done(Topology *t);
int topology_load(Topology *ret);

/* online - isolated - nohz_full; online if that leaves nothing. */
int topology_allowed(const Topology *t, CpuSet *ret);
