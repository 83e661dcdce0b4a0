/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "irq-place.h"
#include "util.h"

static int intersect(const CpuSet *a, const CpuSet *b, CpuSet *ret) {
        unsigned span = MIN(cpuset_span(a), cpuset_span(b));

        assert(a);
        assert(b);
        assert(ret);

        cpuset_done(ret);
        for (unsigned c = 0; c < span; c++)
                if (cpuset_contains(a, c) && cpuset_contains(b, c) && cpuset_add(ret, c) < 0)
                        return -ENOMEM;
        return 0;
}

/* The i-th CPU of a set, modulo its size (round robin). */
static unsigned nth_cpu(const CpuSet *s, size_t i) {
        size_t k = i % cpuset_count(s), seen = 0;
        unsigned span = cpuset_span(s);

        assert(s);

        for (unsigned c = 0; c < span; c++)
                if (cpuset_contains(s, c) && seen++ == k)
                        return c;
        return 0;
}

int irq_place(const Topology *t, int numa_node, const IrqPolicy *p, const IrqVector *v, size_t n,
              const HwQueue *queues, size_t n_queues, CpuSet *ret) {
        CpuSet allowed = {}, node = {}, tmp = {};
        int r = 0;

        assert(t);
        assert(p);
        assert(ret);

        r = topology_allowed(t, &allowed);
        if (r < 0)
                return r;
        /* The device's node, minus isolated CPUs; no node (-1) or an empty one: all allowed. */
        if (numa_node >= 0 && (unsigned) numa_node < t->n_nodes)
                r = intersect(&t->node_cpus[numa_node], &allowed, &node);
        if (r >= 0 && cpuset_count(&node) == 0)
                r = cpuset_copy(&node, &allowed);
        if (r < 0)
                goto finish;

        for (size_t i = 0; i < n && r >= 0; i++) {
                cpuset_done(&ret[i]);
                switch (p->placement) {
                case IRQ_PLACEMENT_QUEUE_LOCAL: {
                        const HwQueue *q = NULL;
                        for (size_t j = 0; j < n_queues; j++)
                                if (v[i].queue >= 0 && queues[j].index == (unsigned) v[i].queue)
                                        q = &queues[j];
                        cpuset_done(&tmp);
                        if (q && q->cpu_list && cpuset_parse(q->cpu_list, &tmp) >= 0 &&
                            (r = intersect(&tmp, &allowed, &ret[i])) >= 0 && cpuset_count(&ret[i]) > 0)
                                break;
                        /* A vector without a queue (admin, config, a single AHCI
                         * vector) or whose queue's CPUs are all excluded: the node. */
                        if (r >= 0)
                                r = cpuset_copy(&ret[i], &node);
                        break;
                }
                case IRQ_PLACEMENT_NODE_LOCAL:
                        r = cpuset_add(&ret[i], nth_cpu(&node, i));
                        break;
                case IRQ_PLACEMENT_SPREAD:
                        r = cpuset_add(&ret[i], nth_cpu(&allowed, i));
                        break;
                case IRQ_PLACEMENT_CPUS:
                        /* Explicit: isolated CPUs allowed, offline ones are not (EINVAL from the kernel). */
                        cpuset_done(&tmp);
                        r = cpuset_parse(p->cpus ?: "", &tmp);
                        if (r >= 0)
                                r = intersect(&tmp, &t->online, &ret[i]);
                        if (r >= 0 && cpuset_count(&ret[i]) == 0)
                                r = -EINVAL;
                        break;
                default:
                        r = -EINVAL;
                }
        }
finish:
        cpuset_done(&allowed);
        cpuset_done(&node);
        cpuset_done(&tmp);
        if (r < 0)
                for (size_t i = 0; i < n; i++)
                        cpuset_done(&ret[i]);
        return r < 0 ? r : 0;
}
