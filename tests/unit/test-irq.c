/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IRQ discovery and placement: /proc/interrupts parsing of captured files, vector
 * classification, PCI function lookup, irqbalance's setup reply, and placement
 * policies on synthetic topologies (two nodes, isolated CPUs, more queues than
 * CPUs and the reverse). */
#include "irq-placement.h"
#include "irq.h"
#include "irqbalance.h"
#include "macro.h"
#include "tests.h"
#include "topology.h"

static char *fixture(const char *rel) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", getenv("IOTUNED_TEST_FIXTURES"), rel) < 0)
                abort();
        return p;
}

TEST(proc_interrupts_host_capture) {
        _cleanup_free_ char *path = fixture("proc-interrupts/host-virtio-2cpu.txt");
        IrqTable t = {};
        ASSERT_INT_EQ(irq_table_load(path, &t), 0);
        ASSERT_STREQ(irq_table_name(&t, 24), "ACPI:Ged");
        ASSERT_STREQ(irq_table_name(&t, 26), "ttyS0");
        ASSERT_STREQ(irq_table_name(&t, 28), "virtio0-config");
        ASSERT_STREQ(irq_table_name(&t, 35), "virtio1-config");
        ASSERT_TRUE(irq_table_name(&t, 9999) == NULL);
        irq_table_done(&t);
}

TEST(proc_interrupts_vm_capture) {
        /* Captured in the test-bed guest (6.1, q35): NVMe, AHCI and virtio-blk. */
        _cleanup_free_ char *path = fixture("proc-interrupts/vm-nvme-ahci-virtio-6.1.txt");
        IrqTable t = {};
        bool nvme_admin = false, nvme_io = false, ahci = false, virtio_req = false;
        ASSERT_INT_EQ(irq_table_load(path, &t), 0);
        for (size_t i = 0; i < t.n; i++) {
                const char *n = t.items[i].name;
                nvme_admin |= strcmp(n, "nvme0q0") == 0;
                nvme_io |= strcmp(n, "nvme0q1") == 0;
                ahci |= strncmp(n, "ahci[", 5) == 0;
                virtio_req |= strstr(n, "-req.0") != NULL;
        }
        ASSERT_TRUE(nvme_admin && nvme_io && ahci && virtio_req);
        irq_table_done(&t);
}

TEST(classify_vectors) {
        int q;
        IrqManaged m;
        irq_classify("nvme0q0", &q, &m);
        ASSERT_INT_EQ(q, -1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
        irq_classify("nvme12q3", &q, &m);
        ASSERT_INT_EQ(q, 2);
        ASSERT_INT_EQ(m, IRQ_MANAGED_PREDICTED);
        irq_classify("virtio2-req.1", &q, &m);
        ASSERT_INT_EQ(q, 1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_PREDICTED);
        irq_classify("virtio2-config", &q, &m);
        ASSERT_INT_EQ(q, -1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
        irq_classify("ahci[0000:00:1f.2]", &q, &m);
        ASSERT_INT_EQ(q, -1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
        irq_classify(NULL, &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("nvme0q1x", &q, &m);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
}

TEST(pci_function_lookup) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        ASSERT_INT_EQ(pci_function_of("/sys/devices/pci0000:00/0000:00:03.0/0000:01:00.0/nvme/nvme0/nvme0n1", &a), 0);
        ASSERT_STREQ(a, "/sys/devices/pci0000:00/0000:00:03.0/0000:01:00.0");
        ASSERT_INT_EQ(pci_function_of("/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", &b), 0);
        ASSERT_STREQ(b, "/sys/devices/pci0000:00/0000:00:1f.2");
        ASSERT_INT_EQ(pci_function_of("/sys/devices/virtual/nvme-fabrics/ctl/nvme1/nvme1c1n1", &a), -ENODEV);
}

TEST(irqbalance_setup_reply) {
        unsigned *irqs = NULL;
        size_t n = 0;
        ASSERT_INT_EQ(irqbalance_parse_setup("SLEEP 10 BANNED 00000000", &irqs, &n), 0);
        ASSERT_INT_EQ(n, 0);
        free(irqs);
        ASSERT_INT_EQ(irqbalance_parse_setup("SLEEP 10 IRQ 27 LOAD 0 DIFF 0 CLASS 2 IRQ 25 LOAD 0 DIFF 0 CLASS 0 "
                                             "BANNED 00000000",
                                             &irqs, &n),
                      0);
        ASSERT_INT_EQ(n, 2);
        ASSERT_INT_EQ(irqs[0], 25);
        ASSERT_INT_EQ(irqs[1], 27);
        free(irqs);
        ASSERT_INT_EQ(irqbalance_parse_setup("garbage", &irqs, &n), -EBADMSG);
        ASSERT_INT_EQ(irqbalance_parse_setup("SLEEP 10 IRQ x", &irqs, &n), -EBADMSG);
}

/* Two nodes: 0-3 and 4-7; CPU 3 isolated, CPU 7 nohz_full. */
static void two_nodes(Topology *t) {
        *t = (Topology) {};
        cpuset_parse("0-7", &t->online);
        cpuset_parse("3", &t->isolated);
        cpuset_parse("7", &t->nohz_full);
        t->n_nodes = 2;
        t->node_cpus = calloc(2, sizeof(CpuSet));
        cpuset_parse("0-3", &t->node_cpus[0]);
        cpuset_parse("4-7", &t->node_cpus[1]);
}

static char *place1(const Topology *t, int node, IrqPlacement pl, const char *cpus, const IrqVector *v, size_t n,
                    const HwQueue *q, size_t nq, size_t which) {
        IrqPolicy p = { .placement = pl, .cpus = (char *) cpus };
        CpuSet *sets = calloc(n, sizeof(CpuSet));
        char *out = NULL;
        if (irq_place(t, node, &p, v, n, q, nq, sets) == 0)
                cpuset_format(&sets[which], &out);
        for (size_t i = 0; i < n; i++)
                cpuset_done(&sets[i]);
        free(sets);
        return out;
}

#define PLACE(want, ...)                                     \
        do {                                                 \
                _cleanup_free_ char *_o = place1(__VA_ARGS__); \
                ASSERT_STREQ(_o, want);                      \
        } while (0)

TEST(queue_local) {
        Topology t;
        two_nodes(&t);
        HwQueue q[] = { { 0, "4, 5" }, { 1, "6, 7" }, { 2, "3" } };
        IrqVector v[] = { { 40, "nvme0q0", -1, IRQ_MANAGED_NO }, { 41, "nvme0q1", 0, IRQ_MANAGED_PREDICTED },
                          { 42, "nvme0q2", 1, IRQ_MANAGED_PREDICTED }, { 43, "nvme0q3", 2, IRQ_MANAGED_PREDICTED } };
        /* admin vector: the device's node (1), minus nohz_full 7 */
        PLACE("4-6", &t, 1, IRQ_PLACEMENT_QUEUE_LOCAL, NULL, v, 4, q, 3, 0);
        PLACE("4-5", &t, 1, IRQ_PLACEMENT_QUEUE_LOCAL, NULL, v, 4, q, 3, 1);
        /* queue 1 serves 6,7; 7 is nohz_full: only 6 */
        PLACE("6", &t, 1, IRQ_PLACEMENT_QUEUE_LOCAL, NULL, v, 4, q, 3, 2);
        /* queue 2 serves only the isolated CPU 3: fall back to the node */
        PLACE("4-6", &t, 1, IRQ_PLACEMENT_QUEUE_LOCAL, NULL, v, 4, q, 3, 3);
        topology_done(&t);
}

TEST(node_local_and_spread_round_robin) {
        Topology t;
        two_nodes(&t);
        IrqVector v[5] = { { .irq = 1 }, { .irq = 2 }, { .irq = 3 }, { .irq = 4 }, { .irq = 5 } };
        /* node 0 without isolated 3: 0,1,2 -> more vectors than CPUs wrap around */
        PLACE("0", &t, 0, IRQ_PLACEMENT_NODE_LOCAL, NULL, v, 5, NULL, 0, 0);
        PLACE("2", &t, 0, IRQ_PLACEMENT_NODE_LOCAL, NULL, v, 5, NULL, 0, 2);
        PLACE("0", &t, 0, IRQ_PLACEMENT_NODE_LOCAL, NULL, v, 5, NULL, 0, 3);
        /* no node (-1): all allowed CPUs 0-2,4-6 */
        PLACE("4", &t, -1, IRQ_PLACEMENT_NODE_LOCAL, NULL, v, 5, NULL, 0, 3);
        PLACE("5", &t, 0, IRQ_PLACEMENT_SPREAD, NULL, v, 5, NULL, 0, 4);
        topology_done(&t);
}

TEST(explicit_cpus) {
        Topology t;
        two_nodes(&t);
        IrqVector v[2] = { { .irq = 1 }, { .irq = 2 } };
        /* explicit lists may name isolated CPUs; offline ones are dropped */
        PLACE("3,7", &t, 0, IRQ_PLACEMENT_CPUS, "3,7-9", v, 2, NULL, 0, 1);
        ASSERT_TRUE(place1(&t, 0, IRQ_PLACEMENT_CPUS, "12-15", v, 2, NULL, 0, 0) == NULL);
        topology_done(&t);
}

TEST(fewer_queues_than_cpus_and_all_isolated) {
        Topology t = {};
        cpuset_parse("0-1", &t.online);
        cpuset_parse("0-1", &t.isolated);
        t.n_nodes = 1;
        t.node_cpus = calloc(1, sizeof(CpuSet));
        cpuset_parse("0-1", &t.node_cpus[0]);
        HwQueue q[] = { { 0, "0, 1" } };
        IrqVector v[] = { { 30, "nvme0q1", 0, IRQ_MANAGED_PREDICTED } };
        /* everything isolated: rather than nothing, the online CPUs */
        PLACE("0-1", &t, 0, IRQ_PLACEMENT_QUEUE_LOCAL, NULL, v, 1, q, 1, 0);
        topology_done(&t);
}

TEST_MAIN(T(proc_interrupts_host_capture), T(proc_interrupts_vm_capture), T(classify_vectors), T(pci_function_lookup),
          T(irqbalance_setup_reply), T(queue_local), T(node_local_and_spread_round_robin), T(explicit_cpus),
          T(fewer_queues_than_cpus_and_all_isolated))
