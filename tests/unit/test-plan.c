/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Matching and planning on synthetic devices: which rule wins, what each
 * device's settings are, and what a bio-based disk may not be given. */
#include "config.h"
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

TEST_MAIN(T(shipped_rules), T(first_match_wins_and_exclude), T(multipath_path_matches_head_name),
          T(udev_property_pins_profile), T(udev_match_and_rule_overrides), T(reconcile_reads_row_behaviour))
