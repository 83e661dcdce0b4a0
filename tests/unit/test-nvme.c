/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NVMe feature command words (checked against the NVMe Base Specification 2.0,
 * 5.27.1: FID 0x07, 0x08, 0x0C), the decoding of Get Features replies and of the
 * blk-mq queue maps, the modprobe.d drop-in, and the pending-reboot logic of the
 * module-wide queue counts when several profiles want different ones. */
#include <errno.h>

#include "config.h"
#include "device.h"
#include "knob.h"
#include "nvme-apply.h"
#include "nvme-feature.h"
#include "plan.h"
#include "reconcile.h"
#include "tests.h"
#include "tmpdir.h"

TEST(coalescing_words) {
        /* cdw11: THR bits 7:0 (0's based entries), TIME bits 15:8 (100 us units). */
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 8, .time_us = 200 }), 0x0207);
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 1, .time_us = 0 }), 0x0000);
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 256, .time_us = 25500 }), 0xffff);
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 2, .time_us = 100 }), 0x0101);
        /* Not the other order: threshold 16, time 100 us is 0x010f, not 0x0f01. */
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 16, .time_us = 100 }), 0x010f);

        NvmeCoalescing c;
        nvme_coalescing_from_dw(0x0207, &c);
        ASSERT_INT_EQ(c.threshold, 8);
        ASSERT_INT_EQ(c.time_us, 200);
        nvme_coalescing_from_dw(0xdead0000, &c); /* reserved bits 31:16 are ignored */
        ASSERT_INT_EQ(c.threshold, 1);
        ASSERT_INT_EQ(c.time_us, 0);
}

TEST(coalescing_text) {
        NvmeCoalescing c;
        char *s = NULL;
        ASSERT_INT_EQ(nvme_coalescing_parse("off", &c), 0);
        ASSERT_INT_EQ(nvme_coalescing_to_cdw11(&c), 0);
        ASSERT_INT_EQ(nvme_coalescing_parse("threshold=8,time_us=100", &c), 0);
        ASSERT_INT_EQ(c.threshold, 8);
        ASSERT_INT_EQ(c.time_us, 100);
        ASSERT_INT_EQ(nvme_coalescing_parse("time_us=300", &c), 0);
        ASSERT_INT_EQ(c.threshold, 1);
        ASSERT_INT_EQ(nvme_coalescing_parse(" threshold = 4 ", &c), 0);
        ASSERT_INT_EQ(c.threshold, 4);
        ASSERT_INT_EQ(nvme_coalescing_parse("time_us=150", &c), -ERANGE);
        ASSERT_INT_EQ(nvme_coalescing_parse("time_us=25600", &c), -ERANGE);
        ASSERT_INT_EQ(nvme_coalescing_parse("threshold=0", &c), -ERANGE);
        ASSERT_INT_EQ(nvme_coalescing_parse("threshold=257", &c), -ERANGE);
        ASSERT_INT_EQ(nvme_coalescing_parse("thr=1", &c), -EINVAL);
        ASSERT_INT_EQ(nvme_coalescing_parse("threshold=1,threshold=2", &c), -EINVAL);
        ASSERT_INT_EQ(nvme_coalescing_parse("threshold", &c), -EINVAL);
        ASSERT_INT_EQ(nvme_coalescing_parse("", &c), -EINVAL);

        ASSERT_INT_EQ(nvme_coalescing_format(&(NvmeCoalescing) { .threshold = 1, .time_us = 0 }, &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(nvme_coalescing_format(&(NvmeCoalescing) { .threshold = 8, .time_us = 0 }, &s), 0);
        ASSERT_STREQ(s, "threshold=8,time_us=0");
        free(s);

        /* The knob: config text and Get Features reply come to one canonical form. */
        const Knob *k = knob_get(KNOB_NVME_COALESCING);
        ASSERT_INT_EQ(k->parse("time_us=200,threshold=8", &s), 0);
        ASSERT_STREQ(s, "threshold=8,time_us=200");
        free(s);
        ASSERT_INT_EQ(k->normalize("0x00000207", &s), 0);
        ASSERT_STREQ(s, "threshold=8,time_us=200");
        free(s);
        ASSERT_INT_EQ(k->normalize("0x00000000", &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(k->normalize("garbage", &s), -EINVAL);
}

TEST(apst_words_and_values) {
        ASSERT_INT_EQ(nvme_apst_to_cdw11(true), 0x1);
        ASSERT_INT_EQ(nvme_apst_to_cdw11(false), 0x0);
        ASSERT_TRUE(nvme_apst_from_dw(0x1));
        ASSERT_TRUE(!nvme_apst_from_dw(0x2)); /* only bit 0 is APSTE */

        const Knob *k = knob_get(KNOB_NVME_APST);
        char *s = NULL;
        ASSERT_INT_EQ(k->parse("off", &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(k->parse("0", &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(k->parse("25000", &s), 0);
        ASSERT_STREQ(s, "25000");
        free(s);
        ASSERT_INT_EQ(k->parse("-1", &s), -ERANGE);
        ASSERT_INT_EQ(k->parse("on", &s), -EINVAL);
        /* pm_qos_latency_tolerance_us and Get Features replies */
        ASSERT_INT_EQ(k->normalize("auto\n", &s), 0);
        ASSERT_STREQ(s, "auto");
        free(s);
        ASSERT_INT_EQ(k->normalize("any", &s), 0);
        ASSERT_STREQ(s, "auto");
        free(s);
        ASSERT_INT_EQ(k->normalize("0", &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(k->normalize("apste=0", &s), 0);
        ASSERT_STREQ(s, "off");
        free(s);
        ASSERT_INT_EQ(k->normalize("apste=1", &s), 0);
        ASSERT_STREQ(s, "auto");
        free(s);
}

TEST(number_of_queues_reply) {
        unsigned sq, cq;
        /* NSQA bits 15:0, NCQA bits 31:16, both 0's based. */
        nvme_num_queues_from_dw(0x00030001, &sq, &cq);
        ASSERT_INT_EQ(sq, 2);
        ASSERT_INT_EQ(cq, 4);
        nvme_num_queues_from_dw(0x003f003f, &sq, &cq);
        ASSERT_INT_EQ(sq, 64);
        ASSERT_INT_EQ(cq, 64);
}

TEST(feature_argument_blocks) {
        struct nvme_get_features_args g;
        struct nvme_set_features_args s;
        uint32_t result;
        uint8_t table[NVME_APST_TABLE_BYTES];

        nvme_feature_get_args(&g, 7, NVME_FEAT_FID_IRQ_COALESCE, &result, NULL, 0);
        ASSERT_INT_EQ(g.fid, 0x08);
        ASSERT_INT_EQ(g.fd, 7);
        ASSERT_INT_EQ(g.sel, NVME_GET_FEATURES_SEL_CURRENT);
        ASSERT_INT_EQ(g.nsid, 0);
        ASSERT_INT_EQ(g.cdw11, 0);
        ASSERT_INT_EQ(g.data_len, 0);
        ASSERT_INT_EQ(g.args_size, sizeof(g));
        ASSERT_TRUE(g.result == &result);

        nvme_feature_caps_args(&g, 7, NVME_FEAT_FID_IRQ_COALESCE, &result);
        ASSERT_INT_EQ(g.fid, 0x08);
        ASSERT_INT_EQ(g.sel, 3); /* SEL 11b: supported capabilities */
        ASSERT_INT_EQ(NVME_FEATURE_CAP_CHANGEABLE, 0x4);

        nvme_feature_set_args(&s, 7, NVME_FEAT_FID_IRQ_COALESCE,
                              nvme_coalescing_to_cdw11(&(NvmeCoalescing) { .threshold = 8, .time_us = 100 }), &result,
                              NULL, 0);
        ASSERT_INT_EQ(s.fid, 0x08);
        ASSERT_INT_EQ(s.cdw11, 0x0107);
        ASSERT_INT_EQ(s.cdw12, 0);
        ASSERT_TRUE(!s.save); /* SV=0: not persisted across a controller reset */
        ASSERT_INT_EQ(s.nsid, 0);
        ASSERT_INT_EQ(s.args_size, sizeof(s));

        nvme_feature_set_args(&s, 7, NVME_FEAT_FID_AUTO_PST, nvme_apst_to_cdw11(false), &result, table,
                              sizeof(table));
        ASSERT_INT_EQ(s.fid, 0x0c);
        ASSERT_INT_EQ(s.cdw11, 0);
        ASSERT_INT_EQ(s.data_len, 256);
        ASSERT_INT_EQ(NVME_FEAT_FID_NUM_QUEUES, 0x07);
}

static int map_of(const char *const *lists, size_t n, bool io_poll, NvmeQueueMap *m) {
        HwQueue q[8];
        for (size_t i = 0; i < n; i++)
                q[i] = (HwQueue) { .index = (unsigned) i, .cpu_list = (char *) lists[i] };
        return nvme_queue_map_from_queues(q, n, io_poll, m);
}

TEST(queue_maps) {
        NvmeQueueMap m;
        /* 2 CPUs, one queue each: the default map only. */
        ASSERT_INT_EQ(map_of((const char *[]) { "0", "1" }, 2, false, &m), 0);
        ASSERT_TRUE(m.known);
        ASSERT_INT_EQ(m.n_default, 2);
        ASSERT_INT_EQ(m.n_read + m.n_poll, 0);
        /* nvme.poll_queues=1 on 2 CPUs, as the guest prints it ("0, 1"). */
        ASSERT_INT_EQ(map_of((const char *[]) { "0", "1", "0, 1" }, 3, true, &m), 0);
        ASSERT_INT_EQ(m.n_default, 2);
        ASSERT_INT_EQ(m.n_poll, 1);
        ASSERT_INT_EQ(nvme_queue_map_write_queues(&m), 0);
        /* nvme.write_queues=1: one default (write) queue, one read queue. */
        ASSERT_INT_EQ(map_of((const char *[]) { "0-1", "0-1" }, 2, false, &m), 0);
        ASSERT_INT_EQ(m.n_default, 1);
        ASSERT_INT_EQ(m.n_read, 1);
        ASSERT_INT_EQ(nvme_queue_map_write_queues(&m), 1);
        /* All three maps. */
        ASSERT_INT_EQ(map_of((const char *[]) { "0", "1", "0", "1", "0-1" }, 5, true, &m), 0);
        ASSERT_INT_EQ(m.n_default, 2);
        ASSERT_INT_EQ(m.n_read, 2);
        ASSERT_INT_EQ(m.n_poll, 1);
        /* Layouts we do not understand are unknown, never guessed. */
        ASSERT_INT_EQ(map_of((const char *[]) { "0", "1", "0" }, 3, false, &m), 0);
        ASSERT_TRUE(!m.known);
        ASSERT_INT_EQ(map_of((const char *[]) { "0-1", "1" }, 2, false, &m), 0);
        ASSERT_TRUE(!m.known);
        ASSERT_INT_EQ(map_of((const char *[]) { "0", "1", "0", "1", "0", "1", "0", "1" }, 8, true, &m), 0);
        ASSERT_TRUE(!m.known); /* four maps: blk-mq has three types */
}

TEST(dropin_round_trip) {
        char *dir = tmpdir_new(), *path = path_join(dir, "modprobe.d/iotuned-nvme.conf"), *text = NULL;
        int v[_KNOB_MAX];

        ASSERT_INT_EQ(nvme_dropin_read(path, v), 0); /* absent: nothing */
        ASSERT_INT_EQ(v[KNOB_NVME_POLL_QUEUES], -1);
        for (size_t i = 0; i < _KNOB_MAX; i++)
                v[i] = -1;
        v[KNOB_NVME_POLL_QUEUES] = 2;
        ASSERT_INT_EQ(nvme_dropin_write(path, v), 0);
        ASSERT_INT_EQ(read_full_file(path, 4096, &text), 0);
        ASSERT_TRUE(strstr(text, "\noptions nvme poll_queues=2") != NULL);
        free(text);
        v[KNOB_NVME_WRITE_QUEUES] = 1;
        ASSERT_INT_EQ(nvme_dropin_write(path, v), 0);
        ASSERT_INT_EQ(nvme_dropin_read(path, v), 0);
        ASSERT_INT_EQ(v[KNOB_NVME_POLL_QUEUES], 2);
        ASSERT_INT_EQ(v[KNOB_NVME_WRITE_QUEUES], 1);
        v[KNOB_NVME_POLL_QUEUES] = v[KNOB_NVME_WRITE_QUEUES] = -1;
        ASSERT_INT_EQ(nvme_dropin_write(path, v), 0);
        ASSERT_TRUE(access(path, F_OK) < 0); /* nothing wanted: no file */
        free(path);
        tmpdir_remove(dir);
}

/* ---- module-wide queue counts with mixed profiles ------------------------------- */

static Config *config_in(const char *dir) {
        char *dirs[] = { (char *) dir, NULL };
        ConfigPaths p = { .dirs = dirs, .builtin = true };
        Config *c = NULL;
        Diag d = {};
        if (config_load(&p, &c, &d) < 0) {
                diag_print(&d, stderr);
                c = NULL;
        }
        diag_done(&d);
        return c;
}

static Device *nvme_disk(const char *name, const char *ctrl, const char *model) {
        Device *d = calloc(1, sizeof(Device));
        d->name = strdup(name);
        d->syspath = strdup("/nonexistent/block/x");
        d->transport = strdup("pcie");
        d->model = strdup(model);
        d->has_mq = true;
        d->numa_node = -1;
        d->queues = calloc(2, sizeof(HwQueue));
        d->queues[0] = (HwQueue) { .index = 0, .cpu_list = strdup("0") };
        d->queues[1] = (HwQueue) { .index = 1, .cpu_list = strdup("1") };
        d->n_queues = 2;
        d->nvme = calloc(1, sizeof(NvmeCtrl));
        d->nvme->name = strdup(ctrl);
        d->nvme->syspath = strdup("/nonexistent/nvme/x");
        d->nvme->transport = strdup("pcie");
        return d;
}

static const Setting *row(const DevicePlan *p, KnobId k) {
        for (size_t i = 0; i < p->n_settings; i++)
                if (p->settings[i].knob->id == k)
                        return &p->settings[i];
        return NULL;
}

TEST(module_queue_counts_pending_reboot) {
        char *dir = tmpdir_new(), *dropin = path_join(dir, "modprobe.d/iotuned-nvme.conf"),
             *module = path_join(dir, "module"), *text = NULL;
        int targets[_KNOB_MAX];
        tmpdir_write(dir, "profiles/poll1.yaml", "nvme: { poll_queues: 1 }\n");
        tmpdir_write(dir, "profiles/poll2.yaml", "nvme: { poll_queues: 2, apply: reboot }\n");
        tmpdir_write(dir, "iotuned.yaml",
                     "rules:\n"
                     "  - { match: { model: 'A*' }, profile: poll1 }\n"
                     "  - { match: { model: 'B*' }, profile: poll2 }\n");
        tmpdir_write(dir, "module/initstate", "live\n"); /* a loadable nvme module */
        Config *c = config_in(dir);
        ASSERT_TRUE(c);

        DevicePlan *plans[3] = {};
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme0n1", "nvme0", "A1"), NULL, &plans[0]), 0);
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme1n1", "nvme1", "B1"), NULL, &plans[1]), 0);
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme1n2", "nvme1", "B1"), NULL, &plans[2]), 0);
        plan_drop_claimed_irqs(plans[2], plans, 2);
        ASSERT_TRUE(row(plans[0], KNOB_NVME_POLL_QUEUES) && row(plans[1], KNOB_NVME_POLL_QUEUES));
        ASSERT_STREQ(row(plans[0], KNOB_NVME_POLL_QUEUES)->object, "nvme0 poll_queues");
        ASSERT_TRUE(row(plans[2], KNOB_NVME_POLL_QUEUES) == NULL); /* its controller is planned with nvme1n1 */
        ASSERT_TRUE(strstr(plans[2]->nvme_note, "shared with nvme1n1") != NULL);

        /* The drop-in takes the largest value any profile wants; plans that never had
         * a module row are skipped without a look at their rows. */
        ASSERT_TRUE(plans[0]->has_module_rows && plans[1]->has_module_rows);
        plan_module_targets(plans, 3, targets);
        ASSERT_INT_EQ(targets[KNOB_NVME_POLL_QUEUES], 2);
        ASSERT_INT_EQ(targets[KNOB_NVME_WRITE_QUEUES], -1);

        ReconcileOptions o = { .mode = RECONCILE_DRY_RUN, .modprobe_dropin = dropin, .module_targets = targets,
                               .nvme_module_dir = module };
        ASSERT_INT_EQ(reconcile_device(plans[0], &o), 0);
        const Setting *s = row(plans[0], KNOB_NVME_POLL_QUEUES);
        ASSERT_INT_EQ(s->state, STATE_CHANGED);
        ASSERT_STREQ(s->observed, "0");
        ASSERT_STREQ(s->effective, "1");
        ASSERT_TRUE(strstr(s->note, "would write nvme.poll_queues=2") != NULL);
        ASSERT_TRUE(access(dropin, F_OK) < 0); /* a dry run writes nothing */

        o.mode = RECONCILE_VERIFY;
        ASSERT_INT_EQ(reconcile_device(plans[0], &o), 0);
        ASSERT_INT_EQ(row(plans[0], KNOB_NVME_POLL_QUEUES)->state, STATE_DRIFTED);

        /* APPLY without `apply: rebind`: the drop-in, then pending-reboot. */
        o.mode = RECONCILE_APPLY;
        ASSERT_INT_EQ(reconcile_device(plans[0], &o), 0);
        s = row(plans[0], KNOB_NVME_POLL_QUEUES);
        ASSERT_INT_EQ(s->state, STATE_PENDING_REBOOT);
        ASSERT_TRUE(!plans[0]->rebound);
        ASSERT_INT_EQ(read_full_file(dropin, 4096, &text), 0);
        ASSERT_TRUE(strstr(text, "\noptions nvme poll_queues=2") != NULL);
        free(text);

        /* Now both plans see it in place: pending-reboot, not drift. */
        o.mode = RECONCILE_VERIFY;
        for (size_t i = 0; i < 2; i++) {
                ASSERT_INT_EQ(reconcile_device(plans[i], &o), 0);
                ASSERT_INT_EQ(row(plans[i], KNOB_NVME_POLL_QUEUES)->state, STATE_PENDING_REBOOT);
        }

        /* A controller that already has the queues is ok (a map with one poll queue). */
        Device *d = nvme_disk("nvme2n1", "nvme2", "A2");
        free(d->queues[1].cpu_list);
        d->queues[1].cpu_list = strdup("0-1");
        d->queues[0].cpu_list[0] = '0';
        free(d->queues[0].cpu_list);
        d->queues[0].cpu_list = strdup("0-1");
        d->io_poll = true;
        DevicePlan *ok = NULL;
        ASSERT_INT_EQ(plan_device(c, d, NULL, &ok), 0);
        ASSERT_INT_EQ(reconcile_device(ok, &o), 0);
        ASSERT_INT_EQ(row(ok, KNOB_NVME_POLL_QUEUES)->state, STATE_OK);
        ASSERT_STREQ(row(ok, KNOB_NVME_POLL_QUEUES)->detail, "queues: 1 default, 0 read, 1 poll");

        /* Built into the kernel: modprobe.d cannot help, and we say so. */
        char *builtin = path_join(dir, "builtin");
        tmpdir_write(dir, "builtin/parameters/poll_queues", "0\n");
        o.nvme_module_dir = builtin;
        o.mode = RECONCILE_APPLY;
        ASSERT_INT_EQ(reconcile_device(plans[1], &o), 0);
        s = row(plans[1], KNOB_NVME_POLL_QUEUES);
        ASSERT_INT_EQ(s->state, STATE_FAILED);
        ASSERT_TRUE(strstr(s->note, "kernel command line") != NULL);

        for (size_t i = 0; i < 3; i++)
                device_plan_free(plans[i]);
        device_plan_free(ok);
        config_free(c);
        tmpdir_remove(dir);
        free(dropin);
        free(module);
        free(builtin);
}

TEST(dropin_clamped_to_possible_cpus_and_lowered) {
        char *dir = tmpdir_new(), *dropin = path_join(dir, "iotuned-nvme.conf"), *module = path_join(dir, "module");
        unsigned possible = possible_cpus();
        int targets[_KNOB_MAX], v[_KNOB_MAX];
        tmpdir_write(dir, "module/initstate", "live\n");
        tmpdir_write(dir, "conf/profiles/many.yaml", "nvme: { poll_queues: 4096 }\n");
        tmpdir_write(dir, "conf/iotuned.yaml", "default_profile: many\n");
        char *conf = path_join(dir, "conf");
        Config *c = config_in(conf);
        ASSERT_TRUE(c);
        ASSERT_TRUE(possible > 0); /* /sys/devices/system/cpu/possible exists here */

        DevicePlan *p = NULL;
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme0n1", "nvme0", "A"), NULL, &p), 0);
        plan_module_targets(&p, 1, targets);
        ASSERT_INT_EQ(targets[KNOB_NVME_POLL_QUEUES], 4096);
        ReconcileOptions o = { .mode = RECONCILE_APPLY, .modprobe_dropin = dropin, .module_targets = targets,
                               .nvme_module_dir = module };
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        /* nvme's io_queue_count_set refuses more than the possible CPUs, and a refused
         * option stops the module from loading: never write one. */
        ASSERT_INT_EQ(nvme_dropin_read(dropin, v), 0);
        ASSERT_INT_EQ(v[KNOB_NVME_POLL_QUEUES], (int) possible);
        char want[16];
        snprintf(want, sizeof(want), "%u", possible);
        ASSERT_STREQ(row(p, KNOB_NVME_POLL_QUEUES)->effective, want); /* resolved: clamped the same way */
        device_plan_free(p);
        config_free(c);

        /* The profiles now want 0 and the controller has 0: the drop-in follows down. */
        tmpdir_write(dir, "conf/profiles/many.yaml", "nvme: { poll_queues: 0 }\n");
        c = config_in(conf);
        ASSERT_TRUE(c);
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme0n1", "nvme0", "A"), NULL, &p), 0);
        plan_module_targets(&p, 1, targets);
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(row(p, KNOB_NVME_POLL_QUEUES)->state, STATE_OK);
        ASSERT_INT_EQ(nvme_dropin_read(dropin, v), 0);
        ASSERT_INT_EQ(v[KNOB_NVME_POLL_QUEUES], 0);
        device_plan_free(p);
        config_free(c);
        tmpdir_remove(dir);
        free(dropin);
        free(module);
        free(conf);
}

/* nvme.io_queue_depth: observed as the tag depth + 1, capped by the controller's
 * MQES, the drop-in not capped by it (another controller may take it in full), and
 * nr_requests under none says what the pending depth will allow. */
TEST(io_queue_depth_row) {
        char *dir = tmpdir_new(), *dropin = path_join(dir, "iotuned-nvme.conf"), *module = path_join(dir, "module"),
             *conf = path_join(dir, "conf"), *disk = path_join(dir, "disk"), *key = NULL;
        int targets[_KNOB_MAX], v[_KNOB_MAX];
        tmpdir_write(dir, "module/initstate", "live\n");
        tmpdir_write(dir, "disk/queue/scheduler", "[none] mq-deadline\n");
        tmpdir_write(dir, "disk/queue/nr_requests", "1023\n");
        tmpdir_write(dir, "conf/profiles/deep.yaml",
                     "queue: { scheduler: none, nr_requests: 4096 }\nnvme: { io_queue_depth: 4095 }\n");
        tmpdir_write(dir, "conf/iotuned.yaml", "default_profile: deep\n");
        Config *c = config_in(conf);
        ASSERT_TRUE(c);

        Device *d = nvme_disk("nvme0n1", "nvme0", "A");
        free(d->syspath);
        d->syspath = strdup(disk);
        d->nr_tags = 1023;                  /* the default io_queue_depth 1024 */
        d->nvme->max_queue_entries = 2048;  /* QEMU: CAP.MQES 0x7ff */
        DevicePlan *p = NULL;
        ASSERT_INT_EQ(plan_device(c, d, NULL, &p), 0);
        ASSERT_STREQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->object, "nvme0 io_queue_depth");
        plan_module_targets(&p, 1, targets);
        ASSERT_INT_EQ(targets[KNOB_NVME_IO_QUEUE_DEPTH], 4095);

        ReconcileOptions o = { .mode = RECONCILE_DRY_RUN, .modprobe_dropin = dropin, .module_targets = targets,
                               .nvme_module_dir = module };
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        const Setting *s = row(p, KNOB_NVME_IO_QUEUE_DEPTH);
        ASSERT_INT_EQ(s->state, STATE_CHANGED);
        ASSERT_STREQ(s->observed, "1024");
        ASSERT_STREQ(s->effective, "2048"); /* capped at MQES + 1 */
        ASSERT_TRUE(strstr(s->note, "would write nvme.io_queue_depth=4095") != NULL);
        ASSERT_STREQ(s->detail, "queues: 2 default, 0 read, 0 poll; tag depth 1023");
        s = row(p, KNOB_NR_REQUESTS);
        ASSERT_STREQ(s->effective, "1023"); /* writing more now would be EINVAL */
        ASSERT_STREQ(s->note,
                     "clamped to 1023 (hardware tag depth; 2047 once the pending nvme.io_queue_depth takes effect)");
        ASSERT_INT_EQ(s->state, STATE_OK);

        /* APPLY without rebind: the drop-in says 4095, not this controller's 2048, and
         * nothing else; pending-reboot. */
        o.mode = RECONCILE_APPLY;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->state, STATE_PENDING_REBOOT);
        ASSERT_INT_EQ(nvme_dropin_read(dropin, v), 0);
        ASSERT_INT_EQ(v[KNOB_NVME_IO_QUEUE_DEPTH], 4095);
        ASSERT_INT_EQ(v[KNOB_NVME_POLL_QUEUES], -1);
        ASSERT_INT_EQ(v[KNOB_NVME_WRITE_QUEUES], -1);
        /* A rebind for another depth is another rebind. */
        key = nvme_rebind_key(d->nvme, v);
        ASSERT_STREQ(key, "nvme0 poll_queues=-1 write_queues=-1 io_queue_depth=4095");
        free(key);
        o.mode = RECONCILE_VERIFY;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->state, STATE_PENDING_REBOOT); /* not drift */
        device_plan_free(p);

        /* Probed again with the depth (after a rebind): ok, and nr_requests follows. */
        d = nvme_disk("nvme0n1", "nvme0", "A");
        free(d->syspath);
        d->syspath = strdup(disk);
        d->nr_tags = 2047;
        d->nvme->max_queue_entries = 2048;
        ASSERT_INT_EQ(plan_device(c, d, NULL, &p), 0);
        o.mode = RECONCILE_DRY_RUN;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->state, STATE_OK);
        ASSERT_STREQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->observed, "2048");
        ASSERT_STREQ(row(p, KNOB_NR_REQUESTS)->effective, "2047");
        ASSERT_STREQ(row(p, KNOB_NR_REQUESTS)->note, "clamped to 2047 (hardware tag depth)");
        device_plan_free(p);

        /* The profiles now want less than the controller has: ok, the drop-in follows down. */
        tmpdir_write(dir, "conf/profiles/deep.yaml", "nvme: { io_queue_depth: 256 }\n");
        config_free(c);
        c = config_in(conf);
        ASSERT_TRUE(c);
        d = nvme_disk("nvme0n1", "nvme0", "A");
        d->nr_tags = 1023;
        ASSERT_INT_EQ(plan_device(c, d, NULL, &p), 0);
        plan_module_targets(&p, 1, targets);
        o.mode = RECONCILE_APPLY;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->state, STATE_OK);
        ASSERT_TRUE(strstr(row(p, KNOB_NVME_IO_QUEUE_DEPTH)->note, "has 1024 entries per I/O queue") != NULL);
        ASSERT_INT_EQ(nvme_dropin_read(dropin, v), 0);
        ASSERT_INT_EQ(v[KNOB_NVME_IO_QUEUE_DEPTH], 256);
        device_plan_free(p);

        config_free(c);
        tmpdir_remove(dir);
        free(dropin);
        free(module);
        free(conf);
        free(disk);
}

TEST(apst_without_the_kernel_only_off) {
        NvmeCtrl c = { .name = (char *) "nvme0", .has_pm_qos = false, .identified = true, .apsta = true,
                       .coalescing_changeable = -1 };
        const Knob *k = knob_get(KNOB_NVME_APST);
        char *why = NULL;
        ASSERT_INT_EQ(nvme_row_changeable(&c, k, "off", &why), 1);
        ASSERT_INT_EQ(nvme_row_changeable(&c, k, "25000", &why), 0);
        ASSERT_TRUE(strstr(why, "only 'off'") != NULL);
        free(why);
        why = NULL;
        c.has_pm_qos = true;
        ASSERT_INT_EQ(nvme_row_changeable(&c, k, "25000", &why), 1);
        c.coalescing_changeable = 0;
        ASSERT_INT_EQ(nvme_row_changeable(&c, knob_get(KNOB_NVME_COALESCING), "off", &why), 0);
        free(why);
}

TEST(controller_rows_only_on_nvme) {
        char *dir = tmpdir_new();
        tmpdir_write(dir, "profiles/ctl.yaml",
                     "nvme: { apst: off, coalescing: { threshold: 8, time_us: 100 }, apply: rebind }\n");
        tmpdir_write(dir, "iotuned.yaml", "default_profile: ctl\n");
        Config *c = config_in(dir);
        ASSERT_TRUE(c);
        DevicePlan *n = NULL, *v = NULL;
        ASSERT_INT_EQ(plan_device(c, nvme_disk("nvme0n1", "nvme0", "X"), NULL, &n), 0);
        ASSERT_TRUE(n->nvme_rebind);
        ASSERT_STREQ(row(n, KNOB_NVME_APST)->desired, "off");
        ASSERT_STREQ(row(n, KNOB_NVME_APST)->object, "nvme0 apst");
        ASSERT_STREQ(row(n, KNOB_NVME_COALESCING)->desired, "threshold=8,time_us=100");
        Device *vd = nvme_disk("vda", "x", "X");
        vd->nvme = nvme_ctrl_free(vd->nvme);
        ASSERT_INT_EQ(plan_device(c, vd, NULL, &v), 0);
        ASSERT_TRUE(row(v, KNOB_NVME_APST) == NULL); /* no controller: no rows, no noise */
        ASSERT_INT_EQ(v->n_settings, 0);
        device_plan_free(n);
        device_plan_free(v);
        config_free(c);
        tmpdir_remove(dir);
}

/* Hidden multipath path disks, found by listing sysfs (they send no uevent): a
 * controller's children, and through a subsystem's links every controller's. */
TEST(multipath_path_disks) {
        char *dir = tmpdir_new(), *ctrl1 = path_join(dir, "ctl/nvme1"), *ctrl3 = path_join(dir, "ctl/nvme3"),
             *subsys = path_join(dir, "nvme-subsystem/nvme-subsys1"), *gone = path_join(dir, "nope");
        char **l = NULL;

        tmpdir_write(dir, "ctl/nvme1/nvme1c1n1/diskseq", "9\n");
        tmpdir_write(dir, "ctl/nvme1/nvme1c1n2/diskseq", "10\n");
        tmpdir_write(dir, "ctl/nvme1/transport", "tcp\n");
        tmpdir_write(dir, "ctl/nvme1/ng1n1/dev", "x\n");   /* a char device, not a path */
        tmpdir_write(dir, "ctl/nvme3/nvme1c3n1/diskseq", "11\n");
        tmpdir_write(dir, "nvme-subsystem/nvme-subsys1/nvme1n1/size", "8\n"); /* the head */
        tmpdir_write(dir, "nvme-subsystem/nvme-subsys1/subsysnqn", "nqn.test\n");
        tmpdir_symlink(dir, "nvme-subsystem/nvme-subsys1/nvme1", ctrl1);
        tmpdir_symlink(dir, "nvme-subsystem/nvme-subsys1/nvme3", ctrl3);
        tmpdir_symlink(dir, "nvme-subsystem/nvme-subsys1/nvme7", gone); /* deleted meanwhile */

        ASSERT_TRUE(device_name_is_nvme_path("nvme1c3n1"));
        ASSERT_TRUE(!device_name_is_nvme_path("nvme1n1"));
        ASSERT_TRUE(!device_name_is_nvme_path("nvme1c3n1p1"));
        ASSERT_TRUE(!device_name_is_nvme_path("nvmec3n1"));

        ASSERT_INT_EQ(nvme_path_disks(ctrl1, &l), 0);
        ASSERT_INT_EQ(strv_length(l), 2);
        ASSERT_STREQ(l[0], "nvme1c1n1");
        ASSERT_STREQ(l[1], "nvme1c1n2");
        strv_free(l);
        ASSERT_INT_EQ(nvme_path_disks(subsys, &l), 0);
        ASSERT_INT_EQ(strv_length(l), 3);
        ASSERT_STREQ(l[0], "nvme1c1n1");
        ASSERT_STREQ(l[1], "nvme1c1n2");
        ASSERT_STREQ(l[2], "nvme1c3n1");
        strv_free(l);
        l = NULL;
        ASSERT_INT_EQ(nvme_path_disks(gone, &l), -ENOENT);
        ASSERT_TRUE(l == NULL);
        free(ctrl1);
        free(ctrl3);
        free(subsys);
        free(gone);
        tmpdir_remove(dir);
}

TEST_MAIN(T(coalescing_words), T(coalescing_text), T(apst_words_and_values), T(number_of_queues_reply),
          T(feature_argument_blocks), T(queue_maps), T(dropin_round_trip), T(module_queue_counts_pending_reboot),
          T(dropin_clamped_to_possible_cpus_and_lowered), T(io_queue_depth_row), T(apst_without_the_kernel_only_off),
          T(controller_rows_only_on_nvme), T(multipath_path_disks))
