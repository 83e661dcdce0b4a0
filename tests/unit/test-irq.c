/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* IRQ discovery and placement: /proc/interrupts parsing of captured files, vector
 * classification, PCI function lookup, irqbalance's setup reply, the record of
 * the bans iotuned sent (written atomically, read back as untrusted input), and
 * placement policies on synthetic topologies (two nodes, isolated CPUs, more
 * queues than CPUs and the reverse). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "irq-place.h"
#include "irq.h"
#include "irqbalance.h"
#include "macro.h"
#include "tests.h"
#include "tmpdir.h"
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

TEST(proc_interrupts_hostile_numbers) {
        /* IRQ numbers past 2^24-1 (which used to wrap onto IRQ 36, or to a negative
         * int in the plan), signs, leading zeros, a repeated IRQ: skipped. */
        _cleanup_free_ char *path = fixture("proc-interrupts/hostile-numbers.txt");
        IrqTable t = {};
        ASSERT_INT_EQ(irq_table_load(path, &t), 0);
        ASSERT_STREQ(irq_table_name(&t, 36), "nvme0q1");
        ASSERT_STREQ(irq_table_name(&t, 16777215), "highest-ok");
        ASSERT_TRUE(irq_table_name(&t, 16777216) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 16777216u + 36u) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 2147483684u) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 5) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 40) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 41) == NULL);
        ASSERT_TRUE(irq_table_name(&t, 42) == NULL);
        ASSERT_STREQ(irq_table_name(&t, 43), "short-ok");
        for (size_t i = 0; i < t.n; i++) {
                ASSERT_TRUE(t.items[i].irq <= IRQ_NUMBER_MAX);
                ASSERT_TRUE(strncmp(t.items[i].name, "evil", 4) != 0);
                ASSERT_TRUE(strcmp(t.items[i].name, "duplicate-36") != 0);
        }
        ASSERT_INT_EQ(t.n, 6); /* 36, 16777215, 37, 38, 39, 43 */
        irq_table_done(&t);
}

TEST(proc_interrupts_queue_index_out_of_range) {
        int q;
        IrqManaged m;
        irq_classify("nvme0q4294967295", &q, &m);
        ASSERT_INT_EQ(q, -1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
        irq_classify("nvme0q65536", &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("nvme0q65535", &q, &m);
        ASSERT_INT_EQ(q, 65534);
        irq_classify("nvme4294967296q1", &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("nvme0q-1", &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("nvme0q 1", &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("nvme0q+1", &q, &m);
        ASSERT_INT_EQ(q, -1);
        irq_classify("virtio0-req.99999999999", &q, &m);
        ASSERT_INT_EQ(q, -1);
        ASSERT_INT_EQ(m, IRQ_MANAGED_NO);
        irq_classify("virtio0-req.-2", &q, &m);
        ASSERT_INT_EQ(q, -1);
}

TEST(proc_interrupts_cpu_bound) {
        _cleanup_free_ char *path = fixture("proc-interrupts/too-many-cpus.txt");
        IrqTable t = {};
        ASSERT_INT_EQ(irq_table_load(path, &t), -E2BIG);
        ASSERT_TRUE(t.n == 0 && t.items == NULL);
}

TEST(proc_interrupts_parse_is_linear) {
        /* 8192 CPUs in the header and 400000 rows of two counts (~6 MiB): each row
         * used to walk 8192 count columns past its end, 3 * 10^9 steps. */
        size_t size = 0;
        char *text = NULL;
        FILE *f = open_memstream(&text, &size);
        IrqTable t = {};
        struct timespec a, b;
        ASSERT_TRUE(f);
        for (int i = 0; i < IRQ_TABLE_CPU_MAX; i++)
                fprintf(f, "CPU%d ", i);
        fputc('\n', f);
        for (int i = 0; i < 400000; i++)
                fprintf(f, "%d: 1 2 IO-APIC 1-edge n%d\n", i, i);
        /* and one overlong line, skipped */
        for (int i = 0; i < IRQ_TABLE_LINE_MAX; i++)
                fputc('1', f);
        fputs(":\n", f);
        fclose(f);
        clock_gettime(CLOCK_MONOTONIC, &a);
        ASSERT_INT_EQ(irq_table_parse(text, &t), 0);
        clock_gettime(CLOCK_MONOTONIC, &b);
        free(text);
        ASSERT_INT_EQ(t.n, 400000);
        ASSERT_STREQ(irq_table_name(&t, 399999), "n399999");
        irq_table_done(&t);
        /* Linear: well under a second even under sanitizers on a loaded machine. */
        ASSERT_TRUE((b.tv_sec - a.tv_sec) < 5);
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

static int parse_bans(const char *text, int *pid, char **list) {
        _cleanup_free_ unsigned *irqs = NULL;
        size_t n = 0, len = 0;
        int r = irqbalance_bans_parse(text, pid, &irqs, &n);
        if (r < 0)
                return r;
        *list = malloc(n * 12 + 1);
        if (!*list)
                abort();
        (*list)[0] = 0;
        for (size_t i = 0; i < n; i++)
                len += sprintf(*list + len, "%s%u", i ? " " : "", irqs[i]);
        return 0;
}

TEST(bans_record_roundtrip) {
        unsigned irqs[] = { 57, 40, 41, 40 };
        _cleanup_free_ char *text = NULL, *list = NULL;
        int pid = 0;
        ASSERT_INT_EQ(irqbalance_bans_format(1234, irqs, 4, &text), 0);
        ASSERT_STREQ(text, "{ \"version\": 1, \"irqbalance_pid\": 1234, \"irqs\": [ 40, 41, 57 ] }\n");
        ASSERT_INT_EQ(parse_bans(text, &pid, &list), 0);
        ASSERT_INT_EQ(pid, 1234);
        ASSERT_STREQ(list, "40 41 57");
        ASSERT_INT_EQ(irqbalance_bans_format(0, irqs, 1, &text), -EINVAL);
        ASSERT_INT_EQ(irqbalance_bans_format(IRQBALANCE_PID_MAX + 1, irqs, 1, &text), -EINVAL);
}

TEST(bans_record_untrusted) {
        _cleanup_free_ char *list = NULL, *big = NULL;
        int pid = 0;
        size_t len = 0;

        /* unknown keys are ignored, duplicates dropped, order normalised; white space after the object is fine */
        ASSERT_INT_EQ(parse_bans("{\"irqs\":[9,3,9],\"irqbalance_pid\":7,\"version\":1,\"note\":{}}\n \n", &pid, &list),
                      0);
        ASSERT_INT_EQ(pid, 7);
        ASSERT_STREQ(list, "3 9");
        free(list);
        list = NULL;
        ASSERT_INT_EQ(parse_bans("{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[]}", &pid, &list), 0);
        ASSERT_STREQ(list, "");
        free(list);
        list = NULL;
        /* the limits themselves are accepted */
        ASSERT_INT_EQ(parse_bans("{\"version\":1,\"irqbalance_pid\":4194304,\"irqs\":[0,16777215]}", &pid, &list), 0);
        ASSERT_STREQ(list, "0 16777215");

        static const char *const bad[] = {
                "",
                "garbage",
                "[]",
                "null",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1]",                  /* cut short */
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1]} {}",              /* a second document */
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1]} x",               /* trailing garbage */
                "{\"irqbalance_pid\":7,\"irqs\":[1]}",                               /* no version */
                "{\"version\":2,\"irqbalance_pid\":7,\"irqs\":[1]}",                 /* a future format */
                "{\"version\":\"1\",\"irqbalance_pid\":7,\"irqs\":[1]}",
                "{\"version\":1,\"irqs\":[1]}",                                      /* no pid */
                "{\"version\":1,\"irqbalance_pid\":0,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":-5,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":4194305,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":99999999999999999999999,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":7.0,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":\"7\",\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":true,\"irqs\":[1]}",
                "{\"version\":1,\"irqbalance_pid\":7}",                              /* no irqs */
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":\"1 2\"}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":{\"1\":1}}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[-1]}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[16777216]}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[4294967336]}",       /* 40 + 2^32 */
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1.5]}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[\"40\"]}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[null]}",
                "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[[40]]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *l = NULL;
                int r = parse_bans(bad[i], &pid, &l);
                free(l);
                if (r != -EBADMSG)
                        fprintf(stderr, "# accepted or mis-reported (%d): %s\n", r, bad[i]);
                ASSERT_INT_EQ(r, -EBADMSG);
        }

        /* more IRQs than a record may hold */
        big = malloc(64 * 1024);
        ASSERT_TRUE(big);
        len = sprintf(big, "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[");
        for (unsigned i = 0; i <= IRQBALANCE_BANS_MAX; i++)
                len += sprintf(big + len, "%s%u", i ? "," : "", i);
        sprintf(big + len, "]}");
        ASSERT_INT_EQ(parse_bans(big, &pid, &list), -EBADMSG);
}

static unsigned count_entries(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;
        if (!d)
                abort();
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

TEST(bans_record_files) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_join(dir, "run/iotuned/" IRQBALANCE_BANS_RECORD), *text = NULL,
                            *target = path_join(dir, "target"), *rundir = path_join(dir, "run/iotuned");
        _cleanup_free_ unsigned *irqs = NULL;
        unsigned want[] = { 41, 40 };
        size_t n = 0;
        int pid = 0;

        ASSERT_TRUE(path && target && rundir);
        /* none yet; removing none is fine */
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -ENOENT);
        ASSERT_INT_EQ(irqbalance_bans_save(path, 99, NULL, 0), 0);
        /* written (the directory is created), read back, nothing else left in the directory */
        ASSERT_INT_EQ(irqbalance_bans_save(path, 99, want, 2), 0);
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), 0);
        ASSERT_INT_EQ(pid, 99);
        ASSERT_INT_EQ(n, 2);
        ASSERT_INT_EQ(irqs[0], 40);
        ASSERT_INT_EQ(irqs[1], 41);
        ASSERT_INT_EQ(count_entries(rundir), 1);
        /* rewritten in place */
        ASSERT_INT_EQ(irqbalance_bans_save(path, 100, want + 1, 1), 0);
        free(irqs);
        irqs = NULL;
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), 0);
        ASSERT_INT_EQ(pid, 100);
        ASSERT_INT_EQ(n, 1);
        ASSERT_INT_EQ(irqs[0], 40);
        ASSERT_INT_EQ(count_entries(rundir), 1);
        /* n == 0 removes it */
        ASSERT_INT_EQ(irqbalance_bans_save(path, 100, NULL, 0), 0);
        ASSERT_INT_EQ(access(path, F_OK), -1);
        ASSERT_INT_EQ(count_entries(rundir), 0);

        /* a symbolic link is not followed, neither read nor written through */
        tmpdir_write(dir, "target", "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1]}");
        ASSERT_INT_EQ(symlink(target, path), 0);
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -ELOOP);
        ASSERT_INT_EQ(irqbalance_bans_save(path, 5, want, 1), 0);
        ASSERT_INT_EQ(read_regular_file(target, 4096, &text), 0);
        ASSERT_STREQ(text, "{\"version\":1,\"irqbalance_pid\":7,\"irqs\":[1]}");
        free(irqs);
        irqs = NULL;
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), 0);
        ASSERT_INT_EQ(pid, 5);
        ASSERT_INT_EQ(unlink(path), 0);

        /* not a regular file: a directory, a FIFO (must not block) */
        ASSERT_INT_EQ(mkdir(path, 0755), 0);
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -EISDIR);
        ASSERT_INT_EQ(rmdir(path), 0);
        ASSERT_INT_EQ(mkfifo(path, 0644), 0);
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -EBADFD);
        ASSERT_INT_EQ(unlink(path), 0);

        /* too big, and not a record */
        {
                _cleanup_free_ char *huge = malloc(IRQBALANCE_BANS_RECORD_MAX + 2);
                ASSERT_TRUE(huge);
                memset(huge, ' ', IRQBALANCE_BANS_RECORD_MAX + 1);
                huge[IRQBALANCE_BANS_RECORD_MAX + 1] = 0;
                tmpdir_write(dir, "run/iotuned/" IRQBALANCE_BANS_RECORD, huge);
        }
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -EFBIG);
        tmpdir_write(dir, "run/iotuned/" IRQBALANCE_BANS_RECORD, "{\"version\":1}");
        ASSERT_INT_EQ(irqbalance_bans_load(path, &pid, &irqs, &n), -EBADMSG);
        tmpdir_remove(dir);
}

TEST(write_file_atomic_excl_temp) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *path = path_join(dir, "f.json"), *text = NULL;
        ASSERT_TRUE(path);
        ASSERT_INT_EQ(write_file_atomic_full(path, "one", 3, WRITE_FILE_EXCL_TEMP), 0);
        ASSERT_INT_EQ(write_file_atomic_full(path, "two\n", 4, WRITE_FILE_EXCL_TEMP), 0);
        ASSERT_INT_EQ(read_regular_file(path, 16, &text), 0);
        ASSERT_STREQ(text, "two");
        ASSERT_INT_EQ(count_entries(dir), 1);
        free(text);
        text = NULL;
        /* the plain variant behaves as before */
        ASSERT_INT_EQ(write_file_atomic(path, "three", 5), 0);
        ASSERT_INT_EQ(read_regular_file(path, 16, &text), 0);
        ASSERT_STREQ(text, "three");
        ASSERT_INT_EQ(read_regular_file(path, 4, &text), -EFBIG);
        ASSERT_INT_EQ(count_entries(dir), 1);
        tmpdir_remove(dir);
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

TEST_MAIN(T(proc_interrupts_host_capture), T(proc_interrupts_vm_capture), T(proc_interrupts_hostile_numbers),
          T(proc_interrupts_queue_index_out_of_range), T(proc_interrupts_cpu_bound), T(proc_interrupts_parse_is_linear), T(classify_vectors), T(pci_function_lookup),
          T(irqbalance_setup_reply), T(bans_record_roundtrip), T(bans_record_untrusted), T(bans_record_files),
          T(write_file_atomic_excl_temp), T(queue_local), T(node_local_and_spread_round_robin), T(explicit_cpus),
          T(fewer_queues_than_cpus_and_all_isolated))
