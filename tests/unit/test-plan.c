/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Matching and planning on synthetic devices: which rule wins, what each
 * device's settings are, and what a bio-based disk may not be given. */
#include "config.h"
#include "fileio.h"
#include "originals.h"
#include "plan.h"
#include "reconcile.h"
#include "tests.h"
#include "tmpdir.h"

static Config *load_with(const char *main_yaml) {
        char *etc = tmpdir_new();
        char *dirs[] = { etc, NULL };
        ConfigPaths p = { .dirs = dirs, .builtin = true };
        Config *c = NULL;
        Diag d = {};
        if (main_yaml)
                tmpdir_write(etc, "iotuned.yaml", main_yaml);
        if (config_load(&p, &c, &d) < 0) {
                diag_print(&d, stderr);
                c = NULL;
        }
        diag_done(&d);
        tmpdir_remove(etc);
        return c;
}

static Device *dev(const char *name, const char *transport, bool rotational, bool mq) {
        Device *d = calloc(1, sizeof(Device));
        d->name = strdup(name);
        d->syspath = strdup("/sys/devices/virtual/block/x");
        d->transport = strdup(transport);
        d->rotational = rotational;
        d->has_mq = mq;
        d->numa_node = -1;
        d->nr_tags = 1023;
        d->size_bytes = 512ULL << 30;
        return d;
}

static DevicePlan *plan_of(const Config *c, Device *d) {
        DevicePlan *p = NULL;
        return plan_device(c, d, NULL, &p) < 0 ? NULL : p;
}

static const Setting *setting(const DevicePlan *p, KnobId k) {
        for (size_t i = 0; i < p->n_settings; i++)
                if (p->settings[i].knob->id == k)
                        return &p->settings[i];
        return NULL;
}

TEST(shipped_rules) {
        Config *c = load_with(NULL);
        ASSERT_TRUE(c);
        DevicePlan *n = plan_of(c, dev("nvme0n1", "pcie", false, true));
        DevicePlan *s = plan_of(c, dev("sda", "sata", true, true));
        DevicePlan *v = plan_of(c, dev("vda", "virtio", false, true));
        ASSERT_STREQ(n->profile, "latency");
        ASSERT_STREQ(n->rule, "nvme");
        ASSERT_STREQ(s->profile, "throughput");
        ASSERT_STREQ(s->rule, "rotational");
        ASSERT_STREQ(v->profile, "mixed");
        ASSERT_STREQ(v->rule, "default_profile");
        /* settings come in write order, scheduler first */
        ASSERT_INT_EQ(n->settings[0].knob->id, KNOB_SCHEDULER);
        ASSERT_STREQ(setting(n, KNOB_NR_REQUESTS)->desired, "max");
        ASSERT_STREQ(setting(s, KNOB_WBT_LAT_USEC)->desired, "-1");
        device_plan_free(n);
        device_plan_free(s);
        device_plan_free(v);
        config_free(c);
}

TEST(first_match_wins_and_exclude) {
        Config *c = load_with("rules:\n"
                              "  - name: skip-usb\n    match: { transport: usb }\n    exclude: true\n"
                              "  - name: big\n    match: { size: { min: 1T } }\n    profile: throughput\n"
                              "  - name: any\n    match: {}\n    profile: latency\n");
        ASSERT_TRUE(c);
        DevicePlan *u = plan_of(c, dev("sdb", "usb", false, true));
        DevicePlan *small = plan_of(c, dev("sdc", "sata", false, true));
        Device *bigdev = dev("sdd", "sata", false, true);
        bigdev->size_bytes = 2ULL << 40;
        DevicePlan *big = plan_of(c, bigdev);
        ASSERT_TRUE(u->excluded);
        ASSERT_INT_EQ(u->n_settings, 0);
        ASSERT_STREQ(small->rule, "any");
        ASSERT_STREQ(big->rule, "big");
        ASSERT_TRUE(strstr(big->reason, "inside the range") != NULL);
        device_plan_free(u);
        device_plan_free(small);
        device_plan_free(big);
        config_free(c);
}

TEST(multipath_path_matches_head_name) {
        Config *c = load_with("rules:\n  - name: db\n    match: { kernel: nvme1n1 }\n    profile: throughput\n");
        ASSERT_TRUE(c);
        Device *path = dev("nvme1c1n1", "tcp", false, true);
        path->multipath_head_name = strdup("nvme1n1");
        DevicePlan *p = plan_of(c, path);
        ASSERT_STREQ(p->rule, "db");
        ASSERT_TRUE(strstr(p->reason, "multipath head name") != NULL);

        /* the head itself is bio-based: queue knobs are unsupported, read-ahead is not */
        Device *head = dev("nvme1n1", "tcp", false, false);
        head->multipath_head = true;
        DevicePlan *h = plan_of(c, head);
        ASSERT_INT_EQ(setting(h, KNOB_SCHEDULER)->state, STATE_UNSUPPORTED);
        ASSERT_TRUE(strstr(setting(h, KNOB_SCHEDULER)->note, "multipath head") != NULL);
        ASSERT_INT_EQ(setting(h, KNOB_READ_AHEAD_KB)->state, STATE_OK);
        device_plan_free(p);
        device_plan_free(h);
        config_free(c);
}

TEST(udev_property_pins_profile) {
        Config *c = load_with(NULL);
        ASSERT_TRUE(c);
        Device *d = dev("nvme0n1", "pcie", false, true);
        strv_extend(&d->properties, "IOTUNED_PROFILE=throughput");
        DevicePlan *p = plan_of(c, d);
        ASSERT_STREQ(p->profile, "throughput");
        ASSERT_STREQ(p->rule, "IOTUNED_PROFILE");

        Device *bad = dev("nvme1n1", "pcie", false, true);
        strv_extend(&bad->properties, "IOTUNED_PROFILE=nonesuch");
        DevicePlan *b = plan_of(c, bad);
        ASSERT_TRUE(b->error && strstr(b->error, "nonesuch"));
        ASSERT_INT_EQ(b->n_settings, 0);
        device_plan_free(p);
        device_plan_free(b);
        config_free(c);
}

TEST(udev_match_and_rule_overrides) {
        Config *c = load_with("rules:\n"
                              "  - name: slot3\n"
                              "    match: { udev: { ID_PATH: 'pci-0000:3b:00.0-*' }, model: 'ACME*' }\n"
                              "    profile: latency\n"
                              "    set: { queue: { nr_requests: 256, read_ahead_kb: 64 } }\n");
        ASSERT_TRUE(c);
        Device *d = dev("nvme3n1", "pcie", false, true);
        d->model = strdup("ACME Fast 2000");
        strv_extend(&d->properties, "ID_PATH=pci-0000:3b:00.0-nvme-1");
        DevicePlan *p = plan_of(c, d);
        ASSERT_STREQ(p->rule, "slot3");
        ASSERT_STREQ(setting(p, KNOB_NR_REQUESTS)->desired, "256");
        ASSERT_STREQ(setting(p, KNOB_READ_AHEAD_KB)->desired, "64");
        ASSERT_STREQ(setting(p, KNOB_SCHEDULER)->desired, "none"); /* from the profile */
        ASSERT_INT_EQ(setting(p, KNOB_NR_REQUESTS)->origin.line, 5);

        Device *other = dev("nvme4n1", "pcie", false, true);
        other->model = strdup("ACME Fast 2000");
        strv_extend(&other->properties, "ID_PATH=pci-0000:5e:00.0-nvme-1");
        DevicePlan *o = plan_of(c, other);
        ASSERT_STREQ(o->rule, "default_profile");
        char *why = NULL;
        ASSERT_TRUE(!rule_matches(&c->rules[0], other, &why));
        ASSERT_STREQ(why, "udev ID_PATH 'pci-0000:5e:00.0-nvme-1' does not match 'pci-0000:3b:00.0-*'");
        free(why);
        device_plan_free(p);
        device_plan_free(o);
        config_free(c);
}

/* What the knob rows say about each other, as reconcile reads them: the scheduler
 * switch resets nr_requests (a dry run says it is written afterwards), and a value
 * that needs a hardware limit nobody reported names the limit. */
TEST(reconcile_reads_row_behaviour) {
        char *tree = tmpdir_new();
        char *values[_KNOB_MAX] = {};
        DevicePlan *p = NULL;
        Device *d;

        tmpdir_write(tree, "sda/queue/scheduler", "[none] mq-deadline kyber\n");
        tmpdir_write(tree, "sda/queue/nr_requests", "64\n");
        tmpdir_write(tree, "sda/queue/max_sectors_kb", "1280\n");
        d = dev("sda", "sata", false, true);
        free(d->syspath);
        d->syspath = path_join(tree, "sda");
        d->nr_tags = 64;
        values[KNOB_SCHEDULER] = (char *) "mq-deadline";
        values[KNOB_NR_REQUESTS] = (char *) "64";
        values[KNOB_MAX_SECTORS_KB] = (char *) "max";
        ASSERT_INT_EQ(plan_device_from_values(d, "test", values, NULL, "", &p), 0);

        ReconcileOptions o = { .mode = RECONCILE_DRY_RUN };
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(setting(p, KNOB_SCHEDULER)->state, STATE_CHANGED);
        ASSERT_INT_EQ(setting(p, KNOB_NR_REQUESTS)->state, STATE_CHANGED);
        ASSERT_STREQ(setting(p, KNOB_NR_REQUESTS)->note, "the scheduler switch resets it; written afterwards");
        ASSERT_INT_EQ(setting(p, KNOB_MAX_SECTORS_KB)->state, STATE_FAILED);
        ASSERT_STREQ(setting(p, KNOB_MAX_SECTORS_KB)->note,
                     "cannot resolve 'max' for this device (no hardware limit reported)");

        /* Verify does not predict the reset: nr_requests is as wanted now. */
        o.mode = RECONCILE_VERIFY;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(setting(p, KNOB_SCHEDULER)->state, STATE_DRIFTED);
        ASSERT_INT_EQ(setting(p, KNOB_NR_REQUESTS)->state, STATE_OK);
        device_plan_free(p);

        /* "max" needs the tag depth. */
        d = dev("sda", "sata", false, true);
        free(d->syspath);
        d->syspath = path_join(tree, "sda");
        d->nr_tags = 0;
        values[KNOB_SCHEDULER] = NULL;
        values[KNOB_NR_REQUESTS] = (char *) "max";
        values[KNOB_MAX_SECTORS_KB] = NULL;
        ASSERT_INT_EQ(plan_device_from_values(d, "test", values, NULL, "", &p), 0);
        o.mode = RECONCILE_DRY_RUN;
        ASSERT_INT_EQ(reconcile_device(p, &o), 0);
        ASSERT_INT_EQ(setting(p, KNOB_NR_REQUESTS)->state, STATE_FAILED);
        ASSERT_STREQ(setting(p, KNOB_NR_REQUESTS)->note,
                     "cannot resolve 'max' for this device (no hardware tag depth reported)");
        device_plan_free(p);
        tmpdir_remove(tree);
}

/* reconcile_devices() in APPLY mode: more disks than threads, at once, each
 * with its own values written and its own originals recorded (under the one lock
 * the batch holds), each result in its place; a disk whose queue is not there
 * fails alone. */
TEST(reconcile_devices_applies_each_disk) {
        enum { N = RECONCILE_THREADS_MAX + 7 };
        char *tree = tmpdir_new(), *run = tmpdir_new();
        _cleanup_free_ char *originals = path_join(run, "originals");
        DevicePlan *plans[N] = {};
        int results[N];
        char *values[_KNOB_MAX] = {};

        values[KNOB_SCHEDULER] = (char *) "mq-deadline";
        values[KNOB_NR_REQUESTS] = (char *) "64";
        values[KNOB_READ_AHEAD_KB] = (char *) "512";
        values[KNOB_RQ_AFFINITY] = (char *) "2";
        for (int i = 0; i < N; i++) {
                char name[32], attr[64];
                snprintf(name, sizeof(name), "nullb%d", i);
                if (i != 5) { /* nullb5: no queue directory */
                        snprintf(attr, sizeof(attr), "%s/queue/scheduler", name);
                        tmpdir_write(tree, attr, "[none] mq-deadline\n");
                        snprintf(attr, sizeof(attr), "%s/queue/nr_requests", name);
                        tmpdir_write(tree, attr, "256\n");
                        snprintf(attr, sizeof(attr), "%s/queue/read_ahead_kb", name);
                        tmpdir_write(tree, attr, i % 2 ? "128\n" : "512\n");
                        snprintf(attr, sizeof(attr), "%s/queue/rq_affinity", name);
                        tmpdir_write(tree, attr, "1\n");
                }
                Device *d = dev(name, "virtual", false, true);
                free(d->syspath);
                d->syspath = path_join(tree, name);
                d->nr_tags = 256;
                ASSERT_INT_EQ(plan_device_from_values(d, "test", values, NULL, "", &plans[i]), 0);
                results[i] = -1;
        }

        ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = originals };
        ASSERT_INT_EQ(reconcile_devices(plans, N, &o, results), 0);
        for (int i = 0; i < N; i++) {
                _cleanup_free_ char *q = path_join(plans[i]->device->syspath, "queue/read_ahead_kb"), *v = NULL;
                char *orig[_KNOB_MAX] = {};
                ASSERT_INT_EQ(results[i], 0);
                if (i == 5) {
                        ASSERT_INT_EQ(setting(plans[i], KNOB_SCHEDULER)->state, STATE_UNSUPPORTED);
                        continue;
                }
                ASSERT_INT_EQ(setting(plans[i], KNOB_SCHEDULER)->state, STATE_CHANGED);
                ASSERT_INT_EQ(setting(plans[i], KNOB_NR_REQUESTS)->state, STATE_CHANGED);
                ASSERT_INT_EQ(setting(plans[i], KNOB_READ_AHEAD_KB)->state, i % 2 ? STATE_CHANGED : STATE_OK);
                ASSERT_INT_EQ(read_attr(q, &v), 0);
                ASSERT_STREQ(v, "512");
                /* Its own originals, from before its own writes. */
                ASSERT_INT_EQ(originals_load(originals, plans[i]->device, orig, NULL), 0);
                ASSERT_STREQ(orig[KNOB_READ_AHEAD_KB], i % 2 ? "128" : "512");
                ASSERT_STREQ(orig[KNOB_NR_REQUESTS], "256");
                ASSERT_STREQ(orig[KNOB_SCHEDULER], "none");
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        free(orig[k]);
        }
        for (int i = 0; i < N; i++)
                device_plan_free(plans[i]);
        tmpdir_remove(tree);
        tmpdir_remove(run);
}

/* Since Linux 6.11 a write of add_random, iostats or max_sectors_kb is a
 * queue-limits update that raises read_ahead_kb to at least 128 KiB
 * (block/blk-settings.c: blk_apply_bdi_limits): read_ahead_kb is written after
 * them, a dry run says a change of one of them has it written again, a value of
 * 128 KiB or more comes through, and its original is recorded with theirs. 6.1
 * leaves the read-ahead alone. */
TEST(queue_limits_rows_reset_read_ahead_since_6_11) {
        char *tree = tmpdir_new(), *run = tmpdir_new();
        _cleanup_free_ char *originals = path_join(run, "originals");
        char *values[_KNOB_MAX] = {};
        DevicePlan *p = NULL;
        Device *d;

        ASSERT_TRUE(KNOB_READ_AHEAD_KB > KNOB_ADD_RANDOM && KNOB_READ_AHEAD_KB > KNOB_IOSTATS &&
                    KNOB_READ_AHEAD_KB > KNOB_MAX_SECTORS_KB);
        tmpdir_write(tree, "sda/queue/add_random", "1\n");
        tmpdir_write(tree, "sda/queue/read_ahead_kb", "0\n");
        values[KNOB_ADD_RANDOM] = (char *) "0";
        values[KNOB_READ_AHEAD_KB] = (char *) "0";

        const struct {
                const char *release, *read_ahead_now, *read_ahead;
                SettingState state;
                const char *note;
        } cases[] = {
                { "6.12.118+deb12-amd64", "0", "0", STATE_CHANGED,
                  "writing add_random resets it (a queue-limits update); written afterwards" },
                { "6.11.0", "0", "0", STATE_CHANGED,
                  "writing add_random resets it (a queue-limits update); written afterwards" },
                { "6.12.118+deb12-amd64", "512", "512", STATE_OK, NULL },
                { "6.1.0-57-amd64", "0", "0", STATE_OK, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                knob_set_kernel_release(cases[i].release);
                tmpdir_write(tree, "sda/queue/read_ahead_kb", cases[i].read_ahead_now);
                values[KNOB_READ_AHEAD_KB] = (char *) cases[i].read_ahead;
                d = dev("sda", "sata", false, true);
                free(d->syspath);
                d->syspath = path_join(tree, "sda");
                ASSERT_INT_EQ(plan_device_from_values(d, "test", values, NULL, "", &p), 0);
                ReconcileOptions o = { .mode = RECONCILE_DRY_RUN };
                ASSERT_INT_EQ(reconcile_device(p, &o), 0);
                ASSERT_INT_EQ(setting(p, KNOB_ADD_RANDOM)->state, STATE_CHANGED);
                ASSERT_INT_EQ(setting(p, KNOB_READ_AHEAD_KB)->state, cases[i].state);
                ASSERT_STREQ_OR_NULL(setting(p, KNOB_READ_AHEAD_KB)->note, cases[i].note);
                device_plan_free(p);
        }

        /* A plan of add_random alone records read_ahead_kb's original on 6.12 (the
         * write changes it, a restore puts it back), not on 6.1. */
        values[KNOB_READ_AHEAD_KB] = NULL;
        const char *releases[] = { "6.12.118+deb12-amd64", "6.1.0-57-amd64" };
        for (size_t i = 0; i < ELEMENTSOF(releases); i++) {
                char *orig[_KNOB_MAX] = {};
                knob_set_kernel_release(releases[i]);
                tmpdir_write(tree, "sda/queue/add_random", "1\n");
                tmpdir_write(tree, "sda/queue/read_ahead_kb", "16\n");
                d = dev("sda", "sata", false, true);
                free(d->syspath);
                d->syspath = path_join(tree, "sda");
                ASSERT_INT_EQ(plan_device_from_values(d, "test", values, NULL, "", &p), 0);
                ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = originals };
                ASSERT_INT_EQ(reconcile_device(p, &o), 0);
                ASSERT_INT_EQ(setting(p, KNOB_ADD_RANDOM)->state, STATE_CHANGED);
                ASSERT_INT_EQ(originals_load(originals, p->device, orig, NULL), 0);
                ASSERT_STREQ(orig[KNOB_ADD_RANDOM], "1");
                ASSERT_STREQ_OR_NULL(orig[KNOB_READ_AHEAD_KB], i == 0 ? "16" : NULL);
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        free(orig[k]);
                ASSERT_INT_EQ(originals_forget(originals, p->device->name), 0);
                device_plan_free(p);
        }
        knob_set_kernel_release(NULL);
        tmpdir_remove(tree);
        tmpdir_remove(run);
}

TEST_MAIN(T(shipped_rules), T(first_match_wins_and_exclude), T(multipath_path_matches_head_name),
          T(udev_property_pins_profile), T(udev_match_and_rule_overrides), T(reconcile_reads_row_behaviour),
          T(reconcile_devices_applies_each_disk), T(queue_limits_rows_reset_read_ahead_since_6_11))
