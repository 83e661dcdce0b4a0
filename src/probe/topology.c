/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <numa.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "fileio.h"
#include "topology.h"
#include "util.h"

void topology_done(Topology *t) {
        assert(t);

        cpuset_done(&t->online);
        cpuset_done(&t->isolated);
        cpuset_done(&t->nohz_full);
        for (unsigned i = 0; i < t->n_nodes; i++)
                cpuset_done(&t->node_cpus[i]);
        free(t->node_cpus);
        *t = (Topology) {};
}

/* Absent or unreadable files are empty sets: a kernel without nohz_full has no file. */
static void load_cpulist(const char *path, CpuSet *ret) {
        _cleanup_free_ char *v = NULL;

        assert(path);
        assert(ret);

        if (read_attr(path, &v) < 0 || cpuset_parse(v, ret) < 0)
                cpuset_done(ret);
}

int topology_load(Topology *ret) {
        Topology t = {};
        int r;

        assert(ret);

        load_cpulist("/sys/devices/system/cpu/online", &t.online);
        if (cpuset_count(&t.online) == 0)
                for (int c = 0; c < get_nprocs(); c++)
                        if ((r = cpuset_add(&t.online, (unsigned) c)) < 0)
                                goto fail;
        load_cpulist("/sys/devices/system/cpu/isolated", &t.isolated);
        load_cpulist("/sys/devices/system/cpu/nohz_full", &t.nohz_full);

        if (numa_available() >= 0) {
                struct bitmask *bm = numa_allocate_cpumask();
                int max = numa_max_node();
                if (!bm) {
                        r = -ENOMEM;
                        goto fail;
                }
                t.n_nodes = (unsigned) max + 1;
                t.node_cpus = calloc(t.n_nodes, sizeof(CpuSet));
                if (!t.node_cpus) {
                        numa_bitmask_free(bm);
                        r = -ENOMEM;
                        goto fail;
                }
                for (int n = 0; n <= max; n++) {
                        numa_bitmask_clearall(bm);
                        if (numa_node_to_cpus(n, bm) < 0)
                                continue; /* a hole in the node numbering */
                        for (unsigned c = 0; c < bm->size; c++)
                                if (numa_bitmask_isbitset(bm, c) && (r = cpuset_add(&t.node_cpus[n], c)) < 0) {
                                        numa_bitmask_free(bm);
                                        goto fail;
                                }
                }
                numa_bitmask_free(bm);
        } else {
                /* No NUMA support: one node with every online CPU. */
                t.n_nodes = 1;
                t.node_cpus = calloc(1, sizeof(CpuSet));
                if (!t.node_cpus || cpuset_copy(&t.node_cpus[0], &t.online) < 0) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        *ret = t;
        return 0;
fail:
        topology_done(&t);
        return r;
}

int topology_allowed(const Topology *t, CpuSet *ret) {
        CpuSet a = {};
        unsigned span = cpuset_span(&t->online);

        assert(t);
        assert(ret);

        for (unsigned c = 0; c < span; c++)
                if (cpuset_contains(&t->online, c) && !cpuset_contains(&t->isolated, c) &&
                    !cpuset_contains(&t->nohz_full, c) && cpuset_add(&a, c) < 0) {
                        cpuset_done(&a);
                        return -ENOMEM;
                }
        if (cpuset_count(&a) == 0 && cpuset_copy(&a, &t->online) < 0)
                return -ENOMEM;
        cpuset_done(ret);
        *ret = a;
        return 0;
}
