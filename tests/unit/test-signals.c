/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* irq_counts_parse()/_load() on captured and hostile /proc/interrupts texts, and
 * the findings signals_block() and signals_irq() draw from two samples
 * (tests/fixtures/signals/). */
#include <inttypes.h>
#include <math.h>
#include <sys/stat.h>

#include "blockstat.h"
#include "cpuset.h"
#include "finding.h"
#include "irq-counts.h"
#include "macro.h"
#include "signals.h"
#include "tests.h"
#include "tmpdir.h"
#include "topology.h"

#define ASSERT_NEAR(a, b) ASSERT_TRUE(fabs((double) (a) - (double) (b)) < 1e-6)

static char *fixture(const char *rel) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", getenv("IOTUNED_TEST_FIXTURES"), rel) < 0)
                abort();
        return p;
}

static int load_counts(const char *rel, uint64_t sampled_usec, IrqCounts *ret) {
        _cleanup_free_ char *path = fixture(rel);
        int r = irq_counts_load(path, NULL, 0, ret);
        if (r >= 0)
                ret->sampled_usec = sampled_usec;
        return r;
}

static void load_stat(const char *rel, uint64_t sampled_usec, BlockStat *ret) {
        _cleanup_free_ char *path = fixture(rel), *text = NULL;
        if (read_full_file(path, 4096, &text) < 0 || blockstat_parse(text, ret) < 0)
                abort();
        ret->sampled_usec = sampled_usec;
}

static const Finding *find(const FindingList *l, const char *kind) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].kind, kind))
                        return &l->items[i];
        return NULL;
}

static size_t count_kind(const FindingList *l, const char *kind) {
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += streq(l->items[i].kind, kind);
        return n;
}

/* The value `name` of f, NAN when it has none. */
static double value(const Finding *f, const char *name) {
        for (size_t i = 0; f && i < f->n_values; i++)
                if (streq(f->values[i].name, name))
                        return f->values[i].value;
        return NAN;
}

static void topology_of(Topology *t, const char *online, const char *const *nodes, unsigned n_nodes) {
        *t = (Topology){};
        if (cpuset_parse(online, &t->online) < 0)
                abort();
        t->node_cpus = calloc(n_nodes, sizeof(CpuSet));
        if (!t->node_cpus)
                abort();
        t->n_nodes = n_nodes;
        for (unsigned i = 0; i < n_nodes; i++)
                if (cpuset_parse(nodes[i], &t->node_cpus[i]) < 0)
                        abort();
}

/* nvme0q0 (admin), nvme0q1 and nvme0q2 at IRQs first, first+1, first+2. */
static IrqVectors nvme_vectors(unsigned first, IrqVector items[static 3]) {
        items[0] = (IrqVector){.irq = first, .name = (char *) "nvme0q0", .queue = -1};
        items[1] =
                (IrqVector){.irq = first + 1, .name = (char *) "nvme0q1", .queue = 0, .managed = IRQ_MANAGED_PREDICTED};
        items[2] =
                (IrqVector){.irq = first + 2, .name = (char *) "nvme0q2", .queue = 1, .managed = IRQ_MANAGED_PREDICTED};
        return (IrqVectors){.items = items, .n = 3};
}

/* ---- irq_counts ---- */

TEST(counts_of_a_captured_two_cpu_file) {
        IrqCounts c = {};
        const IrqCount *row;

        ASSERT_INT_EQ(load_counts("signals/interrupts-2cpu-a.txt", 0, &c), 0);
        ASSERT_INT_EQ(c.n_cpus, 2);
        ASSERT_INT_EQ(c.cpu_ids[0], 0);
        ASSERT_INT_EQ(c.cpu_ids[1], 1);
        ASSERT_INT_EQ(c.n, 7); /* 0 1 4 24 25 26 27; NMI, LOC, ERR, MIS are not numeric rows */
        ASSERT_TRUE(c.sampled_usec == 0);
        row = irq_counts_find(&c, 25);
        ASSERT_TRUE(row);
        ASSERT_INT_EQ(row->per_cpu[0], 10000);
        ASSERT_INT_EQ(row->per_cpu[1], 0);
        ASSERT_INT_EQ(irq_counts_find(&c, 26)->per_cpu[1], 5000);
        ASSERT_TRUE(!irq_counts_find(&c, 28));
        irq_counts_done(&c);
        ASSERT_INT_EQ(c.n, 0);
}

TEST(counts_load_stamps_the_monotonic_clock) {
        _cleanup_free_ char *path = fixture("signals/interrupts-2cpu-a.txt");
        IrqCounts c = {};
        ASSERT_INT_EQ(irq_counts_load(path, NULL, 0, &c), 0);
        ASSERT_TRUE(c.sampled_usec > 0);
        irq_counts_done(&c);
}

TEST(counts_header_with_an_offline_cpu) {
        IrqCounts c = {};
        const IrqCount *row;

        ASSERT_INT_EQ(load_counts("signals/interrupts-offline-cpu2.txt", 0, &c), 0);
        ASSERT_INT_EQ(c.n_cpus, 3);
        ASSERT_INT_EQ(c.cpu_ids[0], 0);
        ASSERT_INT_EQ(c.cpu_ids[1], 1);
        ASSERT_INT_EQ(c.cpu_ids[2], 3);
        ASSERT_INT_EQ(irq_counts_column(&c, 3), 2);
        ASSERT_INT_EQ(irq_counts_column(&c, 2), -ENOENT);
        ASSERT_INT_EQ(irq_counts_column(&c, 0), 0);
        row = irq_counts_find(&c, 41);
        ASSERT_TRUE(row);
        ASSERT_INT_EQ(row->per_cpu[irq_counts_column(&c, 3)], 4900);
        irq_counts_done(&c);
}

TEST(counts_hostile_rows_are_skipped) {
        IrqCounts c = {};

        ASSERT_INT_EQ(load_counts("signals/interrupts-garbage.txt", 0, &c), 0);
        ASSERT_INT_EQ(c.n_cpus, 2); /* the first header; the second is skipped */
        ASSERT_INT_EQ(c.cpu_ids[1], 2);
        /* kept: 24 (its first row), 26 (UINT64_MAX fits), 31 */
        ASSERT_INT_EQ(c.n, 3);
        ASSERT_INT_EQ(c.items[0].irq, 24);
        ASSERT_INT_EQ(c.items[0].per_cpu[0], 3);
        ASSERT_INT_EQ(c.items[0].per_cpu[1], 4);
        ASSERT_INT_EQ(c.items[1].irq, 26);
        ASSERT_TRUE(c.items[1].per_cpu[0] == UINT64_MAX);
        ASSERT_INT_EQ(c.items[2].irq, 31);
        ASSERT_INT_EQ(c.items[2].per_cpu[1], 2);
        /* the 24-digit count, 2^64, the short row, letters, leading zero, 2^24, sign */
        ASSERT_TRUE(!irq_counts_find(&c, 25));
        ASSERT_TRUE(!irq_counts_find(&c, 27));
        ASSERT_TRUE(!irq_counts_find(&c, 28));
        ASSERT_TRUE(!irq_counts_find(&c, 29));
        ASSERT_TRUE(!irq_counts_find(&c, 30));
        ASSERT_TRUE(!irq_counts_find(&c, 32));
        ASSERT_TRUE(!irq_counts_find(&c, 99)); /* before the header */
        ASSERT_TRUE(!irq_counts_find(&c, 16777216));
        irq_counts_done(&c);
}

TEST(counts_only_the_chosen_irqs) {
        const unsigned want[] = {41, 500, 40};
        _cleanup_free_ char *path = fixture("signals/interrupts-4cpu-a.txt");
        IrqCounts c = {};

        ASSERT_INT_EQ(irq_counts_load(path, want, ELEMENTSOF(want), &c), 0);
        ASSERT_INT_EQ(c.n_cpus, 4);
        ASSERT_INT_EQ(c.n, 2);
        ASSERT_INT_EQ(c.items[0].irq, 40);
        ASSERT_INT_EQ(c.items[1].irq, 41);
        ASSERT_INT_EQ(c.items[1].per_cpu[3], 4000);
        irq_counts_done(&c);
}

TEST(counts_bad_headers) {
        static const char *const bad[] = {
                " 24: 1 2 PCI-MSIX 0-edge nvme0q0\n", /* no header */
                "",
                "   CPU0 CPU0\n 24: 1 2 x\n", /* repeated */
                "   CPU1 CPU0\n 24: 1 2 x\n", /* descending */
                "   CPU0 CPUx\n",
                "   CPU0 CPU01\n",
                "   CPU0 CPU8192\n", /* NR_CPUS is at most 8192 */
                "   CPU0CPU1\n",
                "   CPU\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                IrqCounts c = {};
                int r = irq_counts_parse(bad[i], NULL, 0, &c);
                if (r != -EBADMSG)
                        fprintf(stderr, "# case %zu: %d\n", i, r);
                ASSERT_INT_EQ(r, -EBADMSG);
        }
}

TEST(counts_too_many_cpus) {
        _cleanup_free_ char *path = fixture("proc-interrupts/too-many-cpus.txt");
        IrqCounts c = {};
        ASSERT_INT_EQ(irq_counts_load(path, NULL, 0, &c), -E2BIG);
}

TEST(counts_tabs_and_crlf_and_no_final_newline) {
        IrqCounts c = {};
        ASSERT_INT_EQ(irq_counts_parse("\tCPU0\tCPU3\r\n 7:\t1\t2\tx\r\n 8: 3 4", NULL, 0, &c), 0);
        ASSERT_INT_EQ(c.n, 2);
        ASSERT_INT_EQ(c.cpu_ids[1], 3);
        ASSERT_INT_EQ(c.items[0].per_cpu[1], 2);
        ASSERT_INT_EQ(c.items[1].per_cpu[1], 4);
        irq_counts_done(&c);
}

TEST(counts_load_refuses_a_fifo) {
        _cleanup_free_ char *dir = tmpdir_new(), *path = path_join(dir, "interrupts");
        IrqCounts c = {};
        ASSERT_INT_EQ(mkfifo(path, 0600), 0);
        ASSERT_INT_EQ(irq_counts_load(path, NULL, 0, &c), -EBADFD);
        unlink(path);
        rmdir(dir);
}

/* ---- signals_block ---- */

TEST(software_queue_mq_deadline_deep_queue_low_util) {
        BlockStat a, b;
        FindingList l = {};
        const Finding *f;

        load_stat("signals/stat-a.txt", 1000000, &a);
        load_stat("signals/stat-deep-b.txt", 6000000, &b);
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a, &b, -1, &l), 0);
        ASSERT_INT_EQ(l.n, 2);

        f = find(&l, "io-load");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(f->summary, "412 IOPS, queue depth 31.2, await 75.3 ms, utilisation 64%");
        ASSERT_NEAR(value(f, "iops"), 412);
        ASSERT_NEAR(value(f, "queue_depth"), 31.2);
        ASSERT_NEAR(value(f, "await_ms"), 75.3);
        ASSERT_NEAR(value(f, "utilisation"), 0.64);
        ASSERT_TRUE(isnan(value(f, "device_inflight")));

        f = find(&l, "software-queue");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_WARNING);
        ASSERT_STREQ(f->knob, "scheduler");
        ASSERT_STREQ(f->device, "nvme0n1");
        ASSERT_STREQ(f->summary, "deep queue (31.2 requests on average), await 75.3 ms, utilisation 64%: requests "
                                 "wait in the mq-deadline scheduler; NVMe wants none");
        ASSERT_NEAR(value(f, "queue_depth"), 31.2);
        ASSERT_NEAR(value(f, "await_ms"), 75.3);
        finding_list_done(&l);
}

TEST(software_queue_not_for_none_rotational_or_shallow) {
        BlockStat a, b, shallow;
        FindingList l = {};

        load_stat("signals/stat-a.txt", 1000000, &a);
        load_stat("signals/stat-deep-b.txt", 6000000, &b);
        load_stat("signals/stat-shallow-b.txt", 6000000, &shallow);

        ASSERT_INT_EQ(signals_block("nvme0n1", "none", false, &a, &b, -1, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "io-load");
        finding_list_done(&l);

        ASSERT_INT_EQ(signals_block("sda", "mq-deadline", true, &a, &b, -1, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_INT_EQ(count_kind(&l, "software-queue"), 0);
        finding_list_done(&l);

        ASSERT_INT_EQ(signals_block("nvme0n1", NULL, false, &a, &b, -1, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "software-queue"), 0);
        finding_list_done(&l);

        /* queue depth 1.2, await 0.6 ms */
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a, &shallow, -1, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].summary, "2000 IOPS, queue depth 1.2, await 0.6 ms, utilisation 60%");
        ASSERT_NEAR(value(&l.items[0], "queue_depth"), 1.2);
        finding_list_done(&l);
}

TEST(software_queue_busy_device_needs_the_inflight_sample) {
        BlockStat a, b;
        FindingList l = {};
        const Finding *f;

        load_stat("signals/stat-a.txt", 1000000, &a);
        load_stat("signals/stat-busy-b.txt", 6000000, &b);

        /* 98% busy and nothing else known: the device may be the limit */
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a, &b, -1, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "software-queue"), 0);
        ASSERT_NEAR(value(find(&l, "io-load"), "utilisation"), 0.98);
        finding_list_done(&l);

        /* 20 of 31.2 at the device: most are there */
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a, &b, 20.0, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "software-queue"), 0);
        finding_list_done(&l);

        /* 4 of 31.2 at the device: the rest wait in the scheduler */
        ASSERT_INT_EQ(signals_block("nvme0n1", "bfq", false, &a, &b, 4.0, &l), 0);
        f = find(&l, "software-queue");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_WARNING);
        ASSERT_STREQ(f->summary, "deep queue (31.2 requests on average, 4.0 at the device), await 75.3 ms, "
                                 "utilisation 98%: requests wait in the bfq scheduler; NVMe wants none");
        ASSERT_NEAR(value(f, "device_inflight"), 4.0);
        ASSERT_NEAR(value(find(&l, "io-load"), "device_inflight"), 4.0);
        finding_list_done(&l);
}

TEST(block_idle_and_backwards) {
        BlockStat a, a_later, b;
        FindingList l = {};

        load_stat("signals/stat-a.txt", 1000000, &a);
        load_stat("signals/stat-a.txt", 3000000, &a_later);
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a, &a_later, -1, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "io-load");
        ASSERT_INT_EQ(l.items[0].severity, FINDING_INFO);
        ASSERT_STREQ(l.items[0].summary, "idle: no I/O completed in 2.0 s");
        ASSERT_NEAR(value(&l.items[0], "iops"), 0);
        ASSERT_NEAR(value(&l.items[0], "seconds"), 2.0);
        finding_list_done(&l);

        /* counters that went backwards (another disk under the name) */
        load_stat("signals/stat-deep-b.txt", 1000000, &b);
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &b, &a_later, -1, &l), -EINVAL);
        ASSERT_INT_EQ(l.n, 0);
        /* b not after a */
        ASSERT_INT_EQ(signals_block("nvme0n1", "mq-deadline", false, &a_later, &a, -1, &l), -EINVAL);
        ASSERT_INT_EQ(l.n, 0);
}

/* ---- signals_irq ---- */

TEST(irq_rates_balanced_two_cpus) {
        static const char *const nodes[] = {"0-1"};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(24, items);
        HwQueue queues[] = {{0, (char *) "0"}, {1, (char *) "1"}};
        IrqCounts a = {}, b = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-1", nodes, 1);
        ASSERT_INT_EQ(load_counts("signals/interrupts-2cpu-a.txt", 1000000, &a), 0);
        ASSERT_INT_EQ(load_counts("signals/interrupts-2cpu-b.txt", 6000000, &b), 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 0, queues, 2, &l), 0);
        /* one node: no off-node check; 55% on CPU0: not hot; no silent queue; two queues, two CPUs */
        ASSERT_INT_EQ(l.n, 1);
        f = find(&l, "irq-rates");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(
                f->summary,
                "3 vectors, 1100 interrupts/s: irq 24 (nvme0q0) 0/s, irq 25 (nvme0q1) 600/s, irq 26 (nvme0q2) 500/s");
        ASSERT_NEAR(value(f, "irq24_per_s"), 0.2);
        ASSERT_NEAR(value(f, "irq25_per_s"), 600);
        ASSERT_NEAR(value(f, "irq26_per_s"), 500);
        ASSERT_NEAR(value(f, "total_per_s"), 1100.2);
        ASSERT_NEAR(value(f, "seconds"), 5);
        finding_list_done(&l);

        /* no samples: the queue-map checks only; b before a: -EINVAL */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, NULL, NULL, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &b, &a, &t, 0, queues, 2, &l), -EINVAL);
        ASSERT_INT_EQ(l.n, 0);

        irq_counts_done(&a);
        irq_counts_done(&b);
        topology_done(&t);
}

TEST(irq_hot_cpu_and_silent_queue) {
        static const char *const nodes[] = {"0-1"};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(24, items);
        HwQueue queues[] = {{0, (char *) "0"}, {1, (char *) "1"}};
        IrqCounts b = {}, c = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-1", nodes, 1);
        ASSERT_INT_EQ(load_counts("signals/interrupts-2cpu-b.txt", 6000000, &b), 0);
        ASSERT_INT_EQ(load_counts("signals/interrupts-2cpu-c.txt", 11000000, &c), 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &b, &c, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(l.n, 3);
        ASSERT_INT_EQ(count_kind(&l, "irq-rates"), 1);

        f = find(&l, "hot-cpu");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_STREQ(f->summary,
                     "CPU 0 took 100% of the 4000 interrupts/s of 2 I/O vectors: the completions land on one CPU (as "
                     "they should for one submitting thread; with many, the others' completions cross CPUs)");
        ASSERT_NEAR(value(f, "cpu"), 0);
        ASSERT_NEAR(value(f, "share"), 1.0);
        ASSERT_NEAR(value(f, "total_per_s"), 4000);
        ASSERT_NEAR(value(f, "io_vectors"), 2);

        f = find(&l, "silent-queue");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_STREQ(f->summary,
                     "1 of 2 I/O queues had no interrupt in 5.0 s while irq 25 (nvme0q1) had 20000: irq 26 (nvme0q2)");
        ASSERT_NEAR(value(f, "silent"), 1);
        ASSERT_NEAR(value(f, "max_interrupts"), 20000);
        finding_list_done(&l);

        /* one online CPU: no CPU can be "the one" */
        cpuset_done(&t.online);
        ASSERT_INT_EQ(cpuset_parse("0", &t.online), 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &b, &c, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "hot-cpu"), 0);
        ASSERT_INT_EQ(count_kind(&l, "silent-queue"), 1);
        finding_list_done(&l);

        /* the admin vector is no I/O vector: with q2 taken as admin, one I/O vector, no hot-cpu, no silent queue */
        cpuset_done(&t.online);
        ASSERT_INT_EQ(cpuset_parse("0-1", &t.online), 0);
        items[2].queue = -1;
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &b, &c, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "irq-rates");
        finding_list_done(&l);

        irq_counts_done(&b);
        irq_counts_done(&c);
        topology_done(&t);
}

TEST(irq_off_node_on_two_nodes) {
        static const char *const nodes[] = {"0-1", "2-3"};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(40, items);
        /* q1 serves CPUs 0-1 but fired on 2-3; q2 serves 2-3 and fired on 0-1 */
        HwQueue queues[] = {{0, (char *) "0, 1"}, {1, (char *) "2, 3"}};
        IrqCounts a = {}, b = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-3", nodes, 2);
        ASSERT_INT_EQ(load_counts("signals/interrupts-4cpu-a.txt", 1000000, &a), 0);
        ASSERT_INT_EQ(load_counts("signals/interrupts-4cpu-b.txt", 11000000, &b), 0);

        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 1); /* irq 42 landed on node 0, irq 40 fired twice */
        ASSERT_INT_EQ(count_kind(&l, "hot-cpu"), 0);      /* CPU2 took 50% */
        ASSERT_INT_EQ(count_kind(&l, "few-queues"), 0);   /* 2 queues for 4 CPUs */
        ASSERT_INT_EQ(l.n, 2);
        f = find(&l, "irq-off-node");
        ASSERT_INT_EQ(f->severity, FINDING_WARNING);
        ASSERT_STREQ(f->knob, "irq 41");
        ASSERT_STREQ(f->summary, "irq 41 (nvme0q1): 100% of its 2000 interrupts landed outside node 0 (fired on "
                                 "CPUs 2-3; node 0 has CPUs 0-1)");
        ASSERT_NEAR(value(f, "irq"), 41);
        ASSERT_NEAR(value(f, "off_node_share"), 1.0);
        ASSERT_NEAR(value(f, "interrupts"), 2000);
        ASSERT_NEAR(value(f, "numa_node"), 0);
        ASSERT_NEAR(value(find(&l, "irq-rates"), "irq41_per_s"), 200);
        finding_list_done(&l);

        /* the disk on node 1: irq 42 is the one off the node (1000 on CPUs 0-1), irq 41 is at home */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 1, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 1);
        f = find(&l, "irq-off-node");
        ASSERT_STREQ(f->knob, "irq 42");
        ASSERT_NEAR(value(f, "interrupts"), 1000);
        ASSERT_STREQ(f->summary, "irq 42 (nvme0q2): 100% of its 1000 interrupts landed outside node 1 (fired on "
                                 "CPUs 0-1; node 1 has CPUs 2-3)");
        finding_list_done(&l);

        /* no node known, or a node out of range: no check */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, -1, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 0);
        finding_list_done(&l);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 7, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 0);
        finding_list_done(&l);

        /* q1's queue serves only CPUs 2-3 (its submitters ran there): completing there is right */
        queues[0].cpu_list = (char *) "2, 3";
        queues[1].cpu_list = (char *) "0, 1";
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 0);
        finding_list_done(&l);

        irq_counts_done(&a);
        irq_counts_done(&b);
        topology_done(&t);
}

TEST(irq_off_node_not_on_one_node) {
        static const char *const nodes[] = {"0-3", ""};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(40, items);
        IrqCounts a = {}, b = {};
        Topology t;
        FindingList l = {};

        /* a second node without CPUs (memory only) does not make two */
        topology_of(&t, "0-3", nodes, 2);
        ASSERT_INT_EQ(load_counts("signals/interrupts-4cpu-a.txt", 1000000, &a), 0);
        ASSERT_INT_EQ(load_counts("signals/interrupts-4cpu-b.txt", 11000000, &b), 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 0, NULL, 0, &l), 0);
        ASSERT_INT_EQ(count_kind(&l, "irq-off-node"), 0);
        ASSERT_INT_EQ(l.n, 1);
        finding_list_done(&l);
        irq_counts_done(&a);
        irq_counts_done(&b);
        topology_done(&t);
}

TEST(irq_deltas_across_a_cpu_going_offline) {
        static const char *const nodes[] = {"0-1", "2-3"};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(40, items);
        IrqCounts a = {}, b = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-1,3", nodes, 2);
        ASSERT_INT_EQ(load_counts("signals/interrupts-4cpu-b.txt", 1000000, &a), 0);
        ASSERT_INT_EQ(load_counts("signals/interrupts-offline-cpu2.txt", 3000000, &b), 0);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, -1, NULL, 0, &l), 0);
        f = find(&l, "irq-rates");
        ASSERT_TRUE(f);
        /* irq 41: +400 on CPU3 (CPU2 is gone from b); irq 42: +300 +300 */
        ASSERT_NEAR(value(f, "irq41_per_s"), 200);
        ASSERT_NEAR(value(f, "irq42_per_s"), 300);
        ASSERT_NEAR(value(f, "irq40_per_s"), 1);
        finding_list_done(&l);
        irq_counts_done(&a);
        irq_counts_done(&b);
        topology_done(&t);
}

TEST(irq_counter_wraps_at_32_bits) {
        static const char *const nodes[] = {"0-1"};
        IrqVector items[3];
        IrqVectors v = nvme_vectors(24, items);
        IrqCounts a = {}, b = {};
        Topology t;
        FindingList l = {};

        topology_of(&t, "0-1", nodes, 1);
        ASSERT_INT_EQ(irq_counts_parse("CPU0 CPU1\n24: 0 0\n25: 4294967290 7\n26: 99999999999 1\n", NULL, 0, &a), 0);
        ASSERT_INT_EQ(irq_counts_parse("CPU0 CPU1\n24: 0 0\n25: 4 7\n26: 5 1\n", NULL, 0, &b), 0);
        a.sampled_usec = 1000000;
        b.sampled_usec = 2000000;
        ASSERT_INT_EQ(signals_irq("nvme0n1", &v, &a, &b, &t, 0, NULL, 0, &l), 0);
        ASSERT_NEAR(value(find(&l, "irq-rates"), "irq25_per_s"), 10); /* 2^32 - 4294967290 + 4 */
        ASSERT_NEAR(value(find(&l, "irq-rates"), "irq26_per_s"), 0);  /* no 32-bit counter: no increase */
        finding_list_done(&l);
        irq_counts_done(&a);
        irq_counts_done(&b);
        topology_done(&t);
}

TEST(queue_map_one_cpu) {
        static const char *const nodes[] = {"0-3"};
        HwQueue queues[] = {{0, (char *) "0"}, {1, (char *) "0"}, {2, (char *) "0"}};
        IrqVectors none = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-3", nodes, 1);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 3, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        f = find(&l, "queue-map-one-cpu");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_WARNING);
        ASSERT_STREQ(f->summary,
                     "all 3 hardware queues map to CPU 0 alone: one CPU submits and completes for all of them");
        ASSERT_NEAR(value(f, "cpu"), 0);
        ASSERT_NEAR(value(f, "queues"), 3);
        finding_list_done(&l);

        /* one queue, two CPUs, or one queue on CPU 1: fine */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 1, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        queues[1].cpu_list = (char *) "1";
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 3, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        queues[1].cpu_list = (char *) "0, 1";
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 3, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        queues[1].cpu_list = (char *) "garbage";
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 3, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        topology_done(&t);
}

TEST(few_queues) {
        static const char *const nodes[] = {"0-15"};
        HwQueue queues[] = {
                {0, (char *) "0, 1, 2, 3, 4, 5, 6, 7"},
                {1, (char *) "8, 9, 10, 11, 12, 13, 14, 15"},
                {2, (char *) ""},
                {3, (char *) ""},
        };
        IrqVectors none = {};
        Topology t;
        FindingList l = {};
        const Finding *f;

        topology_of(&t, "0-15", nodes, 1);
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 2, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        f = find(&l, "few-queues");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_STREQ(f->summary, "2 hardware queues for 16 online CPUs: 8.0 CPUs share each queue, and completions "
                                 "cross CPUs");
        ASSERT_NEAR(value(f, "queues"), 2);
        ASSERT_NEAR(value(f, "online_cpus"), 16);
        finding_list_done(&l);

        /* 4 queues for 16 CPUs is one per 4: not "few" */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, queues, 4, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        /* no queues (bio-based): nothing to say */
        ASSERT_INT_EQ(signals_irq("nvme0n1", &none, NULL, NULL, &t, 0, NULL, 0, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        topology_done(&t);
}

/* Two /proc/interrupts samples of nvme0q0..q2 at IRQs 24-26, and the disk's
 * reads between them. */
static void polled_case(uint64_t q1, uint64_t q2, uint64_t reads, uint64_t in_queue_ms, FindingList *l, int expect) {
        IrqVector items[3];
        IrqVectors v = nvme_vectors(24, items);
        IrqCounts a = {}, b = {};
        BlockStat sa = { .ios = { 1000, 50 }, .ticks_ms = { 500, 20 }, .time_in_queue_ms = 520,
                         .io_ticks_ms = 520, .sampled_usec = 1000000 },
                  sb = { .ios = { 1000 + reads, 50 }, .ticks_ms = { 500 + in_queue_ms, 20 },
                         .time_in_queue_ms = 520 + in_queue_ms, .io_ticks_ms = 1500, .sampled_usec = 2000000 };
        char text[512];

        ASSERT_INT_EQ(irq_counts_parse("           CPU0       CPU1\n 24: 5 0 PCI-MSIX nvme0q0\n 25: 100 0 PCI-MSIX "
                                       "nvme0q1\n 26: 0 100 PCI-MSIX nvme0q2\n",
                                       NULL, 0, &a),
                      0);
        snprintf(text, sizeof(text),
                 "           CPU0       CPU1\n 24: 9 0 PCI-MSIX nvme0q0\n 25: %" PRIu64 " 0 PCI-MSIX nvme0q1\n"
                 " 26: 0 %" PRIu64 " PCI-MSIX nvme0q2\n",
                 100 + q1, 100 + q2);
        ASSERT_INT_EQ(irq_counts_parse(text, NULL, 0, &b), 0);
        a.sampled_usec = 1000000;
        b.sampled_usec = 2000000;
        ASSERT_INT_EQ(signals_polled("nvme0n1", &sa, &sb, &v, &a, &b, l), expect);
        irq_counts_done(&a);
        irq_counts_done(&b);
}

TEST(polled_completions_raise_no_interrupts) {
        FindingList l = {};
        const Finding *f;

        /* 3000 reads one at a time (0.9 in flight on average), 10 interrupts on the
         * I/O vectors (the admin vector's 4 do not count) */
        polled_case(6, 4, 3000, 900, &l, 1);
        ASSERT_INT_EQ(l.n, 1);
        f = find(&l, "polled-completions");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(f->summary, "2990 of 3000 completions (100%) raised no interrupt at queue depth 0.9: polled I/O "
                                 "reaches the poll queues (or interrupt coalescing is on)");
        ASSERT_NEAR(value(f, "interrupts"), 10);
        finding_list_done(&l);

        /* the same at depth 8: one interrupt may have reaped several: no conclusion */
        polled_case(6, 4, 3000, 8000, &l, 0);
        ASSERT_INT_EQ(l.n, 0);

        /* one interrupt per completion (a few more: reads in flight at the sample), at any depth */
        polled_case(1505, 1505, 3000, 8000, &l, 1);
        f = find(&l, "poll-queues-unused");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_NEAR(value(f, "polled_share"), 0);
        finding_list_done(&l);

        /* too few completions, or far more interrupts than completions (shared vectors): no conclusion */
        polled_case(1, 1, 50, 45, &l, 0);
        polled_case(3000, 3000, 3000, 900, &l, 0);
        ASSERT_INT_EQ(l.n, 0);
}

TEST_MAIN(T(counts_of_a_captured_two_cpu_file), T(counts_load_stamps_the_monotonic_clock),
          T(counts_header_with_an_offline_cpu), T(counts_hostile_rows_are_skipped), T(counts_only_the_chosen_irqs),
          T(counts_bad_headers), T(counts_too_many_cpus), T(counts_tabs_and_crlf_and_no_final_newline),
          T(counts_load_refuses_a_fifo), T(software_queue_mq_deadline_deep_queue_low_util),
          T(software_queue_not_for_none_rotational_or_shallow), T(software_queue_busy_device_needs_the_inflight_sample),
          T(block_idle_and_backwards), T(irq_rates_balanced_two_cpus), T(irq_hot_cpu_and_silent_queue),
          T(irq_off_node_on_two_nodes), T(irq_off_node_not_on_one_node), T(irq_deltas_across_a_cpu_going_offline),
          T(irq_counter_wraps_at_32_bits), T(queue_map_one_cpu), T(few_queues),
          T(polled_completions_raise_no_interrupts))
