/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "macro.h"
#include "signals.h"
#include "util.h"

/* How many vectors the "irq-rates" summary names (its values hold them all). */
#define RATES_LISTED 8

typedef struct NamedValue {
        const char *name;
        double value;
} NamedValue;

static int add_values(Finding *f, const NamedValue *v, size_t n) {
        assert(f);

        for (size_t i = 0; i < n; i++) {
                int r = finding_value(f, v[i].name, v[i].value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- block load ---- */

static bool software_queue_signature(const char *scheduler, bool rotational, const BlockLoad *l, double inflight_mean) {
        assert(l);

        if (rotational || isempty(scheduler) || streq(scheduler, "none"))
                return false;
        if (l->queue_depth < SIGNAL_SWQ_MIN_QUEUE_DEPTH || l->await_ms < SIGNAL_SWQ_MIN_AWAIT_MS)
                return false;
        return l->utilisation < SIGNAL_SWQ_MAX_UTILISATION ||
               (inflight_mean >= 0 && inflight_mean <= l->queue_depth * SIGNAL_SWQ_DEVICE_SHARE);
}

static int add_software_queue(const char *disk, const char *scheduler, const BlockLoad *l, double inflight_mean,
                              FindingList *out) {
        _cleanup_free_ char *at_device = NULL;
        bool sampled = inflight_mean >= 0;
        Finding *f;
        int r;

        if (sampled && asprintf_safe(&at_device, ", %.1f at the device", inflight_mean) < 0)
                return -ENOMEM;
        f = finding_add(out, disk, "software-queue", FINDING_WARNING, "scheduler", NULL,
                        "deep queue (%.1f requests on average%s), await %.1f ms, utilisation %.0f%%: requests wait "
                        "in the %s scheduler; %s",
                        l->queue_depth, at_device ?: "", l->await_ms, l->utilisation * 100.0, scheduler,
                        str_startswith(disk, "nvme") ? "NVMe wants none" : "try none");
        if (!f)
                return -ENOMEM;
        r = add_values(f,
                       (const NamedValue[]){
                               {"queue_depth", l->queue_depth},
                               {"await_ms", l->await_ms},
                               {"utilisation", l->utilisation},
                       },
                       3);
        if (r < 0 || !sampled)
                return r;
        return finding_value(f, "device_inflight", inflight_mean);
}

int signals_block(const char *disk, const char *scheduler, bool rotational, const BlockStat *a, const BlockStat *b,
                  double inflight_mean, FindingList *out) {
        BlockLoad l;
        Finding *f;
        int r;

        assert(disk);
        assert(a);
        assert(b);
        assert(out);

        r = blockstat_load(a, b, &l);
        if (r < 0)
                return r;

        if (b->ios[0] - a->ios[0] + b->ios[1] - a->ios[1] == 0) {
                f = finding_add(out, disk, "io-load", FINDING_INFO, NULL, NULL, "idle: no I/O completed in %.1f s",
                                l.seconds);
                if (!f)
                        return -ENOMEM;
                return add_values(f,
                                  (const NamedValue[]){
                                          {"iops", 0},
                                          {"queue_depth", l.queue_depth},
                                          {"seconds", l.seconds},
                                  },
                                  3);
        }

        f = finding_add(out, disk, "io-load", FINDING_INFO, NULL, NULL,
                        "%.0f IOPS, queue depth %.1f, await %.1f ms, utilisation %.0f%%", l.iops, l.queue_depth,
                        l.await_ms, l.utilisation * 100.0);
        if (!f)
                return -ENOMEM;
        r = add_values(f,
                       (const NamedValue[]){
                               {"iops", l.iops},
                               {"queue_depth", l.queue_depth},
                               {"await_ms", l.await_ms},
                               {"utilisation", l.utilisation},
                               {"seconds", l.seconds},
                       },
                       5);
        if (r >= 0 && inflight_mean >= 0)
                r = finding_value(f, "device_inflight", inflight_mean);
        if (r < 0)
                return r;

        if (!software_queue_signature(scheduler, rotational, &l, inflight_mean))
                return 0;
        return add_software_queue(disk, scheduler, &l, inflight_mean, out);
}

/* ---- interrupts ---- */

typedef struct VectorDelta {
        bool known;     /* the vector is in both samples */
        uint64_t total; /* its interrupts between them, over the CPUs both list */
} VectorDelta;

typedef struct IrqContext {
        const char *disk;
        const IrqVectors *v;
        const IrqCounts *a, *b;
        const Topology *t;
        const HwQueue *queues;
        size_t n_queues;
        double seconds;
        int *a_column;     /* per column of b: the column of the same CPU in a, or -1 */
        VectorDelta *d;    /* per vector */
        uint64_t *scratch; /* b->n_cpus: one vector's per-CPU deltas */
} IrqContext;

static uint64_t sat_add(uint64_t x, uint64_t y) {
        return x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

/* One per-CPU count's increase. The kernel's counters are unsigned int (struct
 * irqstat, include/linux/irqdesc.h) and wrap at 2^32; a larger count that went
 * backwards is no kernel counter (a garbage sample): no increase. */
static uint64_t count_delta(uint64_t before, uint64_t after) {
        if (after >= before)
                return after - before;
        if (before <= UINT32_MAX)
                return (uint32_t) (after - before);
        return 0;
}

/* The per-CPU increases of `irq` (into per_cpu, b's columns; may be NULL) and
 * their sum. false when either sample lacks the IRQ. */
static bool vector_delta(const IrqContext *c, unsigned irq, uint64_t *per_cpu, uint64_t *ret_total) {
        const IrqCount *x = irq_counts_find(c->a, irq), *y = irq_counts_find(c->b, irq);
        uint64_t total = 0;

        if (!x || !y)
                return false;
        for (unsigned j = 0; j < c->b->n_cpus; j++) {
                uint64_t d = c->a_column[j] >= 0 ? count_delta(x->per_cpu[c->a_column[j]], y->per_cpu[j]) : 0;
                if (per_cpu)
                        per_cpu[j] = d;
                total = sat_add(total, d);
        }
        *ret_total = total;
        return true;
}

/* "irq 27 (nvme0q1)", or "irq 27" for a vector /proc/interrupts does not name. */
static char *vector_label(const IrqVector *vec) {
        char *s = NULL;

        if (vec->name)
                (void) asprintf_safe(&s, "irq %u (%s)", vec->irq, vec->name);
        else
                (void) asprintf_safe(&s, "irq %u", vec->irq);
        return s;
}

static int add_rates(const IrqContext *c, FindingList *out) {
        _cleanup_free_ char *list = NULL;
        size_t size = 0, known = 0, listed = 0;
        uint64_t total = 0;
        Finding *f;
        FILE *m;
        int r;

        m = open_memstream(&list, &size);
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < c->v->n; i++) {
                if (!c->d[i].known)
                        continue;
                known++;
                total = sat_add(total, c->d[i].total);
                if (listed++ < RATES_LISTED) {
                        _cleanup_free_ char *label = vector_label(&c->v->items[i]);
                        fprintf(m, "%s%s %.0f/s", listed > 1 ? ", " : "", label ?: "?",
                                (double) c->d[i].total / c->seconds);
                }
        }
        if (listed > RATES_LISTED)
                fprintf(m, ", and %zu more", listed - RATES_LISTED);
        if (fclose(m) != 0)
                return -ENOMEM;
        if (known == 0)
                return 0; /* none of the vectors is in both samples: nothing measured */

        f = finding_add(out, c->disk, "irq-rates", FINDING_INFO, NULL, NULL, "%zu vectors, %.0f interrupts/s: %s",
                        known, (double) total / c->seconds, list);
        if (!f)
                return -ENOMEM;
        r = add_values(f,
                       (const NamedValue[]){
                               {"total_per_s", (double) total / c->seconds},
                               {"seconds", c->seconds},
                       },
                       2);
        for (size_t i = 0; r >= 0 && i < c->v->n; i++) {
                char name[32];
                if (!c->d[i].known)
                        continue;
                snprintf(name, sizeof(name), "irq%u_per_s", c->v->items[i].irq);
                r = finding_value(f, name, (double) c->d[i].total / c->seconds);
        }
        return r;
}

static unsigned nodes_with_cpus(const Topology *t) {
        unsigned n = 0;

        for (unsigned i = 0; i < t->n_nodes; i++)
                if (cpuset_count(&t->node_cpus[i]) > 0)
                        n++;
        return n;
}

/* The CPUs of the columns with a non-zero delta in c->scratch. */
static int fired_on(const IrqContext *c, CpuSet *ret) {
        CpuSet s = {};

        for (unsigned j = 0; j < c->b->n_cpus; j++)
                if (c->scratch[j] > 0 && cpuset_add(&s, (unsigned) c->b->cpu_ids[j]) < 0) {
                        cpuset_done(&s);
                        return -ENOMEM;
                }
        *ret = s;
        return 0;
}

/* A managed vector completes on the CPUs of its queue (block/blk-mq-cpumap.c
 * maps CPUs of every node to queues, drivers/nvme/host/pci.c asks for managed
 * affinity): when its queue serves only CPUs off the node and the interrupts
 * stayed on them, the submitters ran there, and the interrupt placement is right. */
static bool follows_off_node_queue(const IrqContext *c, const IrqVector *vec, const CpuSet *node, const CpuSet *fired) {
        _cleanup_(cpuset_done) CpuSet q = {};

        if (vec->queue < 0 || (size_t) vec->queue >= c->n_queues || !c->queues[vec->queue].cpu_list ||
            cpuset_parse(c->queues[vec->queue].cpu_list, &q) < 0)
                return false;
        if (cpuset_count(&q) == 0 || cpuset_intersects(&q, node) || cpuset_count(fired) == 0)
                return false;
        for (unsigned cpu = 0; cpu < cpuset_span(fired); cpu++)
                if (cpuset_contains(fired, cpu) && !cpuset_contains(&q, cpu))
                        return false;
        return true;
}

static int add_off_node_one(const IrqContext *c, size_t i, int numa_node, const CpuSet *node, FindingList *out) {
        const IrqVector *vec = &c->v->items[i];
        _cleanup_(cpuset_done) CpuSet fired = {};
        _cleanup_free_ char *label = NULL, *fired_list = NULL, *node_list = NULL, *knob = NULL;
        uint64_t total, off = 0;
        double share;
        Finding *f;
        int r;

        if (!vector_delta(c, vec->irq, c->scratch, &total) || total < SIGNAL_IRQ_MIN_INTERRUPTS)
                return 0;
        for (unsigned j = 0; j < c->b->n_cpus; j++)
                if (!cpuset_contains(node, (unsigned) c->b->cpu_ids[j]))
                        off = sat_add(off, c->scratch[j]);
        share = (double) off / (double) total;
        if (share <= SIGNAL_IRQ_OFF_NODE_SHARE)
                return 0;
        r = fired_on(c, &fired);
        if (r < 0)
                return r;
        if (follows_off_node_queue(c, vec, node, &fired))
                return 0;

        label = vector_label(vec);
        if (!label || cpuset_format(&fired, &fired_list) < 0 || cpuset_format(node, &node_list) < 0 ||
            asprintf_safe(&knob, "irq %u", vec->irq) < 0)
                return -ENOMEM;
        f = finding_add(out, c->disk, "irq-off-node", FINDING_WARNING, knob, NULL,
                        "%s: %.0f%% of its %" PRIu64 " interrupts landed outside node %d (fired on CPUs %s; node %d "
                        "has CPUs %s)",
                        label, share * 100.0, total, numa_node, fired_list, numa_node, node_list);
        if (!f)
                return -ENOMEM;
        return add_values(f,
                          (const NamedValue[]){
                                  {"irq", vec->irq},
                                  {"off_node_share", share},
                                  {"interrupts", (double) total},
                                  {"numa_node", numa_node},
                          },
                          4);
}

static int add_off_node(const IrqContext *c, int numa_node, FindingList *out) {
        const CpuSet *node;

        if (numa_node < 0 || (unsigned) numa_node >= c->t->n_nodes || nodes_with_cpus(c->t) < 2)
                return 0;
        node = &c->t->node_cpus[numa_node];
        if (cpuset_count(node) == 0)
                return 0;
        for (size_t i = 0; i < c->v->n; i++) {
                int r = add_off_node_one(c, i, numa_node, node, out);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_hot_cpu(const IrqContext *c, FindingList *out) {
        _cleanup_free_ uint64_t *sum = NULL;
        uint64_t total = 0;
        size_t n_io = 0;
        unsigned hot = 0;
        double share;
        Finding *f;

        if (cpuset_count(&c->t->online) < 2 || c->b->n_cpus == 0)
                return 0;
        sum = calloc(c->b->n_cpus, sizeof(uint64_t));
        if (!sum)
                return -ENOMEM;
        for (size_t i = 0; i < c->v->n; i++) {
                uint64_t t;
                if (c->v->items[i].queue < 0 || !vector_delta(c, c->v->items[i].irq, c->scratch, &t))
                        continue;
                n_io++;
                total = sat_add(total, t);
                for (unsigned j = 0; j < c->b->n_cpus; j++)
                        sum[j] = sat_add(sum[j], c->scratch[j]);
        }
        if (n_io < 2 || total == 0 || (double) total / c->seconds < SIGNAL_HOT_CPU_MIN_RATE)
                return 0;
        for (unsigned j = 1; j < c->b->n_cpus; j++)
                if (sum[j] > sum[hot])
                        hot = j;
        share = (double) sum[hot] / (double) total;
        if (share <= SIGNAL_HOT_CPU_SHARE)
                return 0;

        /* A notice: one submitting thread puts all its completions on its CPU, as it
         * should; with many submitters it is the incident (all on CPU 0). */
        f = finding_add(out, c->disk, "hot-cpu", FINDING_NOTICE, NULL, NULL,
                        "CPU %d took %.0f%% of the %.0f interrupts/s of %zu I/O vectors: the completions land on one "
                        "CPU (as they should for one submitting thread; with many, the others' completions cross "
                        "CPUs)",
                        c->b->cpu_ids[hot], share * 100.0, (double) total / c->seconds, n_io);
        if (!f)
                return -ENOMEM;
        return add_values(f,
                          (const NamedValue[]){
                                  {"cpu", c->b->cpu_ids[hot]},
                                  {"share", share},
                                  {"total_per_s", (double) total / c->seconds},
                                  {"io_vectors", (double) n_io},
                          },
                          4);
}

static int add_silent_queues(const IrqContext *c, FindingList *out) {
        _cleanup_free_ char *list = NULL, *busiest_label = NULL;
        size_t size = 0, n_io = 0, silent = 0, busiest = SIZE_MAX;
        Finding *f;
        FILE *m;

        for (size_t i = 0; i < c->v->n; i++) {
                if (c->v->items[i].queue < 0 || !c->d[i].known)
                        continue;
                n_io++;
                if (c->d[i].total == 0)
                        silent++;
                if (busiest == SIZE_MAX || c->d[i].total > c->d[busiest].total)
                        busiest = i;
        }
        if (silent == 0 || busiest == SIZE_MAX || c->d[busiest].total < SIGNAL_IRQ_MIN_INTERRUPTS)
                return 0;

        m = open_memstream(&list, &size);
        if (!m)
                return -ENOMEM;
        for (size_t i = 0, k = 0; i < c->v->n; i++) {
                if (c->v->items[i].queue < 0 || !c->d[i].known || c->d[i].total > 0)
                        continue;
                _cleanup_free_ char *label = vector_label(&c->v->items[i]);
                fprintf(m, "%s%s", k++ > 0 ? ", " : "", label ?: "?");
        }
        if (fclose(m) != 0)
                return -ENOMEM;
        busiest_label = vector_label(&c->v->items[busiest]);
        if (!busiest_label)
                return -ENOMEM;

        f = finding_add(out, c->disk, "silent-queue", FINDING_NOTICE, NULL, NULL,
                        "%zu of %zu I/O queues had no interrupt in %.1f s while %s had %" PRIu64 ": %s", silent, n_io,
                        c->seconds, busiest_label, c->d[busiest].total, list);
        if (!f)
                return -ENOMEM;
        return add_values(f,
                          (const NamedValue[]){
                                  {"silent", (double) silent},
                                  {"io_vectors", (double) n_io},
                                  {"max_interrupts", (double) c->d[busiest].total},
                          },
                          3);
}

static int irq_findings(IrqContext *c, int numa_node, FindingList *out) {
        int r;

        c->a_column = calloc(MAX(c->b->n_cpus, 1u), sizeof(int));
        c->scratch = calloc(MAX(c->b->n_cpus, 1u), sizeof(uint64_t));
        c->d = calloc(MAX(c->v->n, (size_t) 1), sizeof(VectorDelta));
        if (!c->a_column || !c->scratch || !c->d)
                return -ENOMEM;
        /* A CPU that came online in between has no column in a (-ENOENT): its
         * count then is unknown, and left out. */
        for (unsigned j = 0; j < c->b->n_cpus; j++)
                c->a_column[j] = irq_counts_column(c->a, c->b->cpu_ids[j]);
        for (size_t i = 0; i < c->v->n; i++)
                c->d[i].known = vector_delta(c, c->v->items[i].irq, NULL, &c->d[i].total);

        r = add_rates(c, out);
        if (r >= 0)
                r = add_off_node(c, numa_node, out);
        if (r >= 0)
                r = add_hot_cpu(c, out);
        if (r >= 0)
                r = add_silent_queues(c, out);
        return r;
}

/* ---- the queue map ---- */

static int add_queue_map(const char *disk, const Topology *t, const HwQueue *queues, size_t n_queues,
                         FindingList *out) {
        size_t online = cpuset_count(&t->online);
        bool one_cpu = n_queues >= 2;
        unsigned cpu = 0;
        Finding *f;
        int r;

        for (size_t i = 0; one_cpu && i < n_queues; i++) {
                _cleanup_(cpuset_done) CpuSet s = {};
                if (!queues[i].cpu_list || cpuset_parse(queues[i].cpu_list, &s) < 0 || cpuset_count(&s) != 1) {
                        one_cpu = false;
                        break;
                }
                unsigned this = cpuset_span(&s) - 1;
                if (i > 0 && this != cpu)
                        one_cpu = false;
                cpu = this;
        }
        if (one_cpu) {
                f = finding_add(out, disk, "queue-map-one-cpu", FINDING_WARNING, NULL, NULL,
                                "all %zu hardware queues map to CPU %u alone: one CPU submits and completes for all "
                                "of them",
                                n_queues, cpu);
                if (!f)
                        return -ENOMEM;
                r = add_values(f, (const NamedValue[]){{"cpu", cpu}, {"queues", (double) n_queues}}, 2);
                if (r < 0)
                        return r;
        }

        if (n_queues > 0 && (double) n_queues * SIGNAL_FEW_QUEUES_CPUS_PER_QUEUE < (double) online) {
                f = finding_add(out, disk, "few-queues", FINDING_NOTICE, NULL, NULL,
                                "%zu hardware queues for %zu online CPUs: %.1f CPUs share each queue, and completions "
                                "cross CPUs",
                                n_queues, online, (double) online / (double) n_queues);
                if (!f)
                        return -ENOMEM;
                r = add_values(f, (const NamedValue[]){{"queues", (double) n_queues}, {"online_cpus", (double) online}},
                               2);
                if (r < 0)
                        return r;
        }
        return 0;
}

int signals_irq(const char *disk, const IrqVectors *v, const IrqCounts *a, const IrqCounts *b, const Topology *t,
                int numa_node, const HwQueue *queues, size_t n_queues, FindingList *out) {
        int r = 0;

        assert(disk);
        assert(v);
        assert(t);
        assert(queues || n_queues == 0);
        assert(out);

        if (a && b && b->sampled_usec <= a->sampled_usec)
                return -EINVAL;

        if (a && b && v->n > 0) {
                IrqContext c = {
                        .disk = disk,
                        .v = v,
                        .a = a,
                        .b = b,
                        .t = t,
                        .queues = queues,
                        .n_queues = n_queues,
                        .seconds = (double) (b->sampled_usec - a->sampled_usec) / 1e6,
                };
                r = irq_findings(&c, numa_node, out);
                free(c.a_column);
                free(c.scratch);
                free(c.d);
                if (r < 0)
                        return r;
        }
        return add_queue_map(disk, t, queues, n_queues, out);
}

/* The interrupts `irq` raised between two samples, over the CPUs both list. */
static bool irq_total_delta(const IrqCounts *a, const IrqCounts *b, unsigned irq, uint64_t *ret) {
        const IrqCount *x = irq_counts_find(a, irq), *y = irq_counts_find(b, irq);
        uint64_t total = 0;

        if (!x || !y)
                return false;
        for (unsigned j = 0; j < b->n_cpus; j++) {
                int col = irq_counts_column(a, b->cpu_ids[j]);
                if (col >= 0)
                        total = sat_add(total, count_delta(x->per_cpu[col], y->per_cpu[j]));
        }
        *ret = total;
        return true;
}

int signals_polled(const char *disk, const BlockStat *sa, const BlockStat *sb, const IrqVectors *v,
                   const IrqCounts *ia, const IrqCounts *ib, FindingList *out) {
        uint64_t done, irqs = 0, polled;
        unsigned io_vectors = 0;
        BlockLoad l;
        double share;
        Finding *f;

        assert(disk);
        assert(sa);
        assert(sb);
        assert(v);
        assert(ia);
        assert(ib);
        assert(out);

        if (sb->sampled_usec <= sa->sampled_usec || ib->sampled_usec <= ia->sampled_usec)
                return -EINVAL;
        if (sb->ios[0] < sa->ios[0] || sb->ios[1] < sa->ios[1])
                return -EINVAL;
        done = (sb->ios[0] - sa->ios[0]) + (sb->ios[1] - sa->ios[1]);
        for (size_t i = 0; i < v->n; i++) {
                uint64_t d;
                if (v->items[i].queue < 0)
                        continue;
                if (!irq_total_delta(ia, ib, v->items[i].irq, &d))
                        return 0; /* a vector came or went: no conclusion */
                irqs = sat_add(irqs, d);
                io_vectors++;
        }
        /* A few more interrupts than completions is normal (reads still in flight at
         * the second sample); many more means another disk shares the vectors. */
        if (io_vectors == 0 || done < SIGNAL_POLL_MIN_COMPLETIONS || irqs > done + done / 10)
                return 0;
        polled = done > irqs ? done - irqs : 0;
        share = (double) polled / (double) done;
        /* At depth one interrupt may reap several completions: fewer interrupts than
         * completions proves polling only when requests were not in flight together. */
        if (share > SIGNAL_POLL_UNUSED_SHARE &&
            (blockstat_load(sa, sb, &l) < 0 || l.queue_depth > SIGNAL_POLL_MAX_QUEUE_DEPTH))
                return 0;
        if (share <= SIGNAL_POLL_UNUSED_SHARE)
                f = finding_add(out, disk, "poll-queues-unused", FINDING_NOTICE, "poll_queues", NULL,
                                "the disk has poll queues, but its %" PRIu64 " completions raised %" PRIu64
                                " interrupts: no polled I/O reaches them (polling needs RWF_HIPRI or io_uring "
                                "with IORING_SETUP_IOPOLL, fio --hipri)",
                                done, irqs);
        else
                f = finding_add(out, disk, "polled-completions", FINDING_INFO, "poll_queues", NULL,
                                "%" PRIu64 " of %" PRIu64 " completions (%.0f%%) raised no interrupt at queue depth "
                                "%.1f: %s",
                                polled, done, share * 100, l.queue_depth,
                                share >= SIGNAL_POLL_USED_SHARE
                                        ? "polled I/O reaches the poll queues (or interrupt coalescing is on)"
                                        : "some I/O is polled (or interrupt coalescing is on)");
        if (!f)
                return -ENOMEM;
        if (finding_value(f, "completions", (double) done) < 0 || finding_value(f, "interrupts", (double) irqs) < 0 ||
            finding_value(f, "polled_share", share) < 0)
                return -ENOMEM;
        return 1;
}
