/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config_load(): main files, drop-ins and profiles over two directories and the
 * embedded defaults, then, for a configuration that loads, a plan for a fixed set
 * of synthetic disks (as tests/unit/test-plan.c builds them) with IRQ placement on
 * a synthetic topology and PCI tree, and its JSON rendering (iotunectl plan --json).
 *
 * The input is up to ten files separated by lines "%%" (fuzz-util.h), in this
 * order; an empty piece is an absent file, a piece that is "@mask" a symbolic link
 * to /dev/null (masking). */
#include <json-c/json.h>

#include "plan-json.h"
#include "config.h"
#include "device.h"
#include "fuzz-util.h"
#include "irq.h"
#include "plan.h"
#include "topology.h"
#include "util.h"

static const char *const slots[] = {
        "etc/iotuned.yaml",
        "etc/iotuned.yaml.d/10-a.yaml",
        "etc/iotuned.yaml.d/20-b.yaml",
        "etc/profiles/db.yaml",
        "etc/profiles/db-ssd.yaml",
        "etc/profiles/latency.yaml",
        "vendor/iotuned.yaml",
        "vendor/iotuned.yaml.d/20-b.yaml",
        "vendor/profiles/mixed.yaml",
        "vendor/profiles/Bad.Name.yaml",
};
#define N_SLOTS (sizeof(slots) / sizeof(slots[0]))

static char *slot_path[N_SLOTS], *etc_dir, *vendor_dir, *sys_dir;
static Topology topology;
static IrqTable irq_table;
/* Sorted by IRQ, as irq_table_parse() leaves a table. */
static IrqName irq_names[] = {
        { .irq = 19, .name = (char *) "ahci[0000:00:1f.2]" }, { .irq = 24, .name = (char *) "nvme0q0" },
        { .irq = 25, .name = (char *) "nvme0q1" },            { .irq = 26, .name = (char *) "nvme0q2" },
        { .irq = 27, .name = (char *) "nvme0q3" },            { .irq = 28, .name = (char *) "nvme0q4" },
};

static void setup_once(void) {
        static const char *const dirs[] = {
                "etc/iotuned.yaml.d",
                "etc/profiles",
                "vendor/iotuned.yaml.d",
                "vendor/profiles",
                "sys/devices/pci0000:00/0000:00:04.0/msi_irqs",
                "sys/devices/pci0000:00/0000:00:1f.2",
        };
        char *p;

        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
                fuzz_mkdir(dirs[i]);
        for (size_t i = 0; i < N_SLOTS; i++)
                slot_path[i] = fuzz_path(slots[i]);
        etc_dir = fuzz_path("etc");
        vendor_dir = fuzz_path("vendor");
        sys_dir = fuzz_path("sys/devices");
        /* An NVMe controller with five MSI-X vectors, an AHCI function on legacy INTx. */
        for (unsigned irq = 24; irq <= 28; irq++) {
                char rel[128];
                snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/0000:00:04.0/msi_irqs/%u", irq);
                p = fuzz_path(rel);
                fuzz_write_file(p, "msix\n", 5);
                free(p);
        }
        p = fuzz_path("sys/devices/pci0000:00/0000:00:1f.2/irq");
        fuzz_write_file(p, "19\n", 3);
        free(p);

        /* Two nodes of four CPUs, CPU 7 isolated. */
        topology.n_nodes = 2;
        topology.node_cpus = calloc(2, sizeof(CpuSet));
        if (!topology.node_cpus || cpuset_parse("0-7", &topology.online) < 0 ||
            cpuset_parse("7", &topology.isolated) < 0 || cpuset_parse("", &topology.nohz_full) < 0 ||
            cpuset_parse("0-3", &topology.node_cpus[0]) < 0 || cpuset_parse("4-7", &topology.node_cpus[1]) < 0)
                abort();
        irq_table.items = irq_names;
        irq_table.n = sizeof(irq_names) / sizeof(irq_names[0]);
}

static char *xstrdup(const char *s) {
        char *d = s ? strdup(s) : NULL;
        if (s && !d)
                abort();
        return d;
}

static char *xasprintf_sys(const char *rel) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", sys_dir, rel) < 0)
                abort();
        return p;
}

static Device *dev(const char *name, const char *transport, const char *sysrel, bool rotational, bool mq) {
        Device *d = calloc(1, sizeof(Device));
        if (!d)
                abort();
        d->name = xstrdup(name);
        d->syspath = xasprintf_sys(sysrel);
        d->transport = xstrdup(transport);
        d->rotational = rotational;
        d->has_mq = mq;
        d->numa_node = -1;
        d->nr_tags = 1023;
        d->size_bytes = 512ULL << 30;
        return d;
}

static void add_queues(Device *d, const char *const *cpu_lists, size_t n) {
        d->queues = calloc(n, sizeof(HwQueue));
        if (!d->queues)
                abort();
        for (size_t i = 0; i < n; i++)
                d->queues[i] = (HwQueue) { .index = (unsigned) i, .cpu_list = xstrdup(cpu_lists[i]) };
        d->n_queues = n;
}

static NvmeCtrl *ctrl(const char *name) {
        NvmeCtrl *c = calloc(1, sizeof(NvmeCtrl));
        if (!c)
                abort();
        c->name = xstrdup(name);
        c->transport = xstrdup("pcie");
        c->model = xstrdup("ACME Fast 2000");
        c->numa_node = 0;
        return c;
}

static void prop(Device *d, const char *kv) {
        if (strv_extend(&d->properties, kv) < 0)
                abort();
}

static void fixture_devices(DeviceList *l) {
        static const char *const nvme_queues[] = { "0, 1", "2, 3", "4, 5", "6, 7" };
        Device *d;

        l->items = calloc(9, sizeof(Device *));
        if (!l->items)
                abort();
        /* Two namespaces of one controller: they share its vectors and controller rows. */
        d = dev("nvme0n1", "pcie", "pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1", false, true);
        d->numa_node = 0;
        d->model = xstrdup("ACME Fast 2000");
        d->serial = xstrdup("S123");
        d->firmware = xstrdup("1.0");
        d->nqn = xstrdup("nqn.2014-08.org.nvmexpress:uuid:1");
        d->diskseq = xstrdup("9");
        d->nvme = ctrl("nvme0");
        add_queues(d, nvme_queues, 4);
        prop(d, "ID_PATH=pci-0000:00:04.0-nvme-1");
        prop(d, "ID_MODEL=ACME Fast 2000");
        l->items[l->n++] = d;
        d = dev("nvme0n2", "pcie", "pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n2", false, true);
        d->numa_node = 1;
        d->nvme = ctrl("nvme0");
        add_queues(d, nvme_queues, 4);
        prop(d, "IOTUNED_PROFILE=db");
        l->items[l->n++] = d;
        /* NVMe over TCP: a multipath head (bio-based) and its hidden path. */
        d = dev("nvme1n1", "tcp", "virtual/nvme-subsystem/nvme-subsys1/nvme1n1", false, false);
        d->multipath_head = true;
        l->items[l->n++] = d;
        d = dev("nvme1c1n1", "tcp", "virtual/nvme-fabrics/ctl/nvme1/nvme1c1n1", false, true);
        d->multipath_head_name = xstrdup("nvme1n1");
        d->nvme = ctrl("nvme1");
        l->items[l->n++] = d;
        d = dev("sda", "sata", "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", true, true);
        d->size_bytes = 4ULL << 40;
        d->wwn = xstrdup("0x5000c500a1b2c3d4");
        l->items[l->n++] = d;
        d = dev("sdb", "usb", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb", false, true);
        d->size_bytes = 64ULL << 30;
        l->items[l->n++] = d;
        d = dev("vda", "virtio", "pci0000:00/0000:00:05.0/virtio1/block/vda", false, true);
        prop(d, "IOTUNED_PROFILE=nonesuch");
        l->items[l->n++] = d;
        d = dev("dm-0", "dm", "virtual/block/dm-0", false, false);
        l->items[l->n++] = d;
        d = dev("loop0", "loop", "virtual/block/loop0", false, true);
        d->size_bytes = 0;
        l->items[l->n++] = d;
}

static void plan_fixtures(const Config *c) {
        PlanContext ctx = { .topology = &topology, .irqs = &irq_table, .proc_root = fuzz_scratch_dir() };
        DeviceList l = {};
        Plan p = {};
        unsigned counts[_STATE_MAX];
        int targets[_KNOB_MAX];
        json_object *j;

        fixture_devices(&l);
        if (plan_build(c, &l, &ctx, &p) < 0)
                abort(); /* only -ENOMEM: everything else is a per-device error */
        plan_count_states(&p, counts);
        plan_module_targets(p.devices, p.n, targets);
        j = report_plan_document("plan", &p, true);
        if (!j || !json_object_to_json_string(j))
                abort();
        json_object_put(j);
        plan_done(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        FuzzPiece pieces[N_SLOTS];
        char *dirs[] = { NULL, NULL, NULL };
        ConfigPaths paths = { .dirs = dirs, .builtin = true };
        Config *c = NULL;
        Diag d = {};
        size_t n;
        int r;

        if (size > 64 * 1024)
                return 0;
        if (!etc_dir)
                setup_once();
        dirs[0] = etc_dir;
        dirs[1] = vendor_dir;

        n = fuzz_split(data, size, pieces, N_SLOTS);
        for (size_t i = 0; i < N_SLOTS; i++) {
                (void) unlink(slot_path[i]);
                if (i >= n || pieces[i].size == 0)
                        continue;
                if ((pieces[i].size == 5 || (pieces[i].size == 6 && pieces[i].data[5] == '\n')) &&
                    memcmp(pieces[i].data, "@mask", 5) == 0) {
                        if (symlink("/dev/null", slot_path[i]) < 0)
                                abort();
                        continue;
                }
                fuzz_write_file(slot_path[i], pieces[i].data, pieces[i].size);
        }

        r = config_load(&paths, &c, &d);
        if (r == 0) {
                if (!c || d.n > 0)
                        abort(); /* loaded means: no diagnostics */
                plan_fixtures(c);
                config_free(c);
        } else if (r == -EINVAL && d.n == 0)
                abort(); /* -EINVAL always comes with the reasons */
        else {
                /* What `iotunectl check-config` prints. */
                FILE *f = fopen("/dev/null", "we");
                if (f) {
                        diag_print(&d, f);
                        fclose(f);
                }
        }
        diag_done(&d);
        return 0;
}
