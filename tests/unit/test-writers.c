/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "finding.h"
#include "tests.h"
#include "tmpdir.h"
#include "util.h"
#include "writers.h"

/* The fixture tree tests/fixtures/writers/<name>, or abort. */
static char *fixture(const char *name) {
        const char *root = getenv("IOTUNED_TEST_FIXTURES");
        char *p = NULL;

        if (!root || asprintf_safe(&p, "%s/writers/%s", root, name) < 0)
                abort();
        return p;
}

#define NVME0_SYSPATH "sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1"

/* nvme0n1 as device_probe() would build it, its syspath inside `root`. */
static Device *nvme0n1(const char *root) {
        Device *d = calloc(1, sizeof(Device));

        if (!d)
                abort();
        d->name = strdup("nvme0n1");
        d->syspath = path_join(root, NVME0_SYSPATH);
        d->transport = strdup("pcie");
        d->numa_node = -1;
        d->has_mq = true;
        if (strv_extend(&d->properties, "DEVTYPE=disk") < 0 ||
            strv_extend(&d->properties, "ID_MODEL=QEMU NVMe Ctrl") < 0)
                abort();
        return d;
}

/* The writer from `source` for `knob`, or NULL. */
static const Writer *find(const WriterList *l, const char *source, const char *knob) {
        for (size_t i = 0; i < l->n; i++)
                if (streq_ptr(l->items[i].source, source) && streq(l->items[i].knob, knob))
                        return &l->items[i];
        return NULL;
}

static const Writer *find_who(const WriterList *l, const char *who) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].who, who))
                        return &l->items[i];
        return NULL;
}

static size_t count_kind(const WriterList *l, WriterKind k) {
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += l->items[i].kind == k;
        return n;
}

static WriterList scan_basic(void) {
        _cleanup_free_ char *root = fixture("basic");
        _cleanup_(device_freep) Device *d = nvme0n1(root);
        WriterList l = {};

        if (writers_scan(root, d, &l) < 0)
                abort();
        return l;
}

TEST(udev_legacy_rule) {
        WriterList l = scan_basic();
        const Writer *w = find(&l, "/etc/udev/rules.d/60-io.rules:2", "scheduler");

        ASSERT_INT_EQ(count_kind(&l, WRITER_UDEV_RULE), 7);
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->kind, WRITER_UDEV_RULE);
        ASSERT_STREQ(w->who, "udev rule");
        ASSERT_STREQ(w->value, "mq-deadline");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_TRUE(w->on_add);
        ASSERT_TRUE(w->on_change);
        ASSERT_STREQ(w->why, "KERNEL==\"nvme[0-9]*n[0-9]*\" matches nvme0n1");

        /* The same rule for sd[a-z]: listed, but it does not apply. */
        w = find(&l, "/etc/udev/rules.d/60-io.rules:3", "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "bfq");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_NO);
        ASSERT_STREQ(w->why, "KERNEL==\"sd[a-z]\" does not match nvme0n1");

        /* ACTION=="remove" only: no. */
        w = find(&l, "/etc/udev/rules.d/60-io.rules:11", "rq_affinity");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_NO);
        ASSERT_TRUE(!w->on_add && !w->on_change);

        /* ATTR{queue/rotational}=="0" read below the syspath. */
        w = find(&l, "/etc/udev/rules.d/60-io.rules:12", "wbt_lat_usec");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "0");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_STREQ(w->why, "KERNEL==\"nvme*\" matches nvme0n1; ATTR{queue/rotational}==\"0\" matches \"0\"");
        writer_list_done(&l);
}

TEST(udev_continuation_env) {
        WriterList l = scan_basic();
        const Writer *w = find(&l, "/etc/udev/rules.d/60-io.rules:6", "nr_requests");

        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "256");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_TRUE(w->on_add);
        ASSERT_TRUE(!w->on_change);
        ASSERT_STREQ(w->why,
                     "SUBSYSTEM==\"block\" matches \"block\"; ENV{ID_MODEL}==\"QEMU*\" matches \"QEMU NVMe Ctrl\"");
        /* Nothing is reported at the continued lines. */
        ASSERT_TRUE(!find(&l, "/etc/udev/rules.d/60-io.rules:7", "nr_requests"));
        ASSERT_TRUE(!find(&l, "/etc/udev/rules.d/60-io.rules:8", "nr_requests"));
        writer_list_done(&l);
}

TEST(udev_masked_by_etc) {
        WriterList l = scan_basic();

        /* /usr/lib/udev/rules.d/60-io.rules has the same base name as the /etc one. */
        for (size_t i = 0; i < l.n; i++)
                ASSERT_TRUE(!l.items[i].source || !str_startswith(l.items[i].source, "/usr/lib/udev/"));
        ASSERT_TRUE(!find(&l, "/etc/udev/rules.d/60-io.rules:2", "scheduler") ||
                    !streq(find(&l, "/etc/udev/rules.d/60-io.rules:2", "scheduler")->value, "none"));
        writer_list_done(&l);
}

TEST(udev_attrs_parent_walk) {
        _cleanup_free_ char *root = fixture("basic");
        _cleanup_(device_freep) Device *d = nvme0n1(root);
        WriterList l = scan_basic();
        const Writer *w = find(&l, "/etc/udev/rules.d/60-io.rules:9", "read_ahead_kb");

        /* The controller's model is read from a parent of the disk's syspath. */
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "1024");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_STREQ(w->why, "KERNEL==\"nvme*\" matches nvme0n1; ATTRS{model}==\"QEMU*\" matched on nvme0");
        writer_list_done(&l);

        /* With no sysfs to walk the ATTRS key cannot be evaluated: maybe. */
        free(d->syspath);
        d->syspath = strdup("/nonexistent/sys/devices/virtual/block/nvme0n1");
        ASSERT_INT_EQ(writers_scan(root, d, &l), 0);
        w = find(&l, "/etc/udev/rules.d/60-io.rules:9", "read_ahead_kb");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_MAYBE);
        ASSERT_STREQ(w->why, "ATTRS{model}==\"QEMU*\" not evaluated; KERNEL==\"nvme*\" matches nvme0n1");
        /* ATTR{queue/rotational} likewise. */
        w = find(&l, "/etc/udev/rules.d/60-io.rules:12", "wbt_lat_usec");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_MAYBE);
        writer_list_done(&l);
}

TEST(udev_run_echo) {
        WriterList l = scan_basic();
        const Writer *w = find(&l, "/etc/udev/rules.d/60-io.rules:10", "scheduler");

        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "kyber");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_TRUE(w->on_add && w->on_change);
        writer_list_done(&l);
}

TEST(tuned_profile) {
        WriterList l = scan_basic();
        const Writer *w;

        ASSERT_INT_EQ(count_kind(&l, WRITER_TUNED), 5);

        /* [disk] of the active profile over its include: elevator=none, devices=!nvme0n1. */
        w = find(&l, "/etc/tuned/iotest/tuned.conf:7", "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->who, "TuneD profile 'iotest'");
        ASSERT_STREQ(w->value, "none");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_NO);
        ASSERT_STREQ(w->why, "[disk] devices=!nvme0n1 excludes nvme0n1; tuned is running (pid 500)");
        ASSERT_TRUE(!w->dormant);
        /* The included elevator=mq-deadline is overridden. */
        ASSERT_TRUE(!find(&l, "/usr/lib/tuned/base-disk/tuned.conf:5", "scheduler"));

        /* readahead from the include, in sectors: 8192 sectors = 4096 kB. */
        w = find(&l, "/usr/lib/tuned/base-disk/tuned.conf:6", "read_ahead_kb");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->who, "TuneD profile 'iotest' (via 'base-disk')");
        ASSERT_STREQ(w->value, "4096");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_NO);

        /* [sysfs] globs. */
        w = find(&l, "/etc/tuned/iotest/tuned.conf:10", "nr_requests");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "128");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_STREQ(w->why, "[sysfs] /sys/block/nvme*/queue/nr_requests matches /sys/block/nvme0n1/queue/nr_requests; "
                             "tuned is running (pid 500)");
        w = find(&l, "/etc/tuned/iotest/tuned.conf:11", "nomerges");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_NO);

        /* [scheduler] isolated_cores moves IRQs. */
        w = find(&l, "/usr/lib/tuned/base-disk/tuned.conf:9", "irq_affinity");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_TRUE(!w->value);

        /* /usr/lib/tuned/iotest is overridden by /etc/tuned/iotest. */
        for (size_t i = 0; i < l.n; i++)
                ASSERT_TRUE(!streq(l.items[i].knob, "rq_affinity") || l.items[i].kind != WRITER_TUNED);
        writer_list_done(&l);
}

TEST(processes) {
        WriterList l = scan_basic();
        const Writer *w;

        ASSERT_INT_EQ(l.n, 15);
        w = find_who(&l, "irqbalance (pid 412)");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->kind, WRITER_IRQBALANCE);
        ASSERT_STREQ(w->knob, "irq_affinity");
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        ASSERT_TRUE(!w->source && !w->value);
        /* Two iotuned besides us (test-writers is not iotuned): both reported. */
        w = find_who(&l, "another iotuned (pid 77)");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->knob, "*");
        ASSERT_TRUE(find_who(&l, "another iotuned (pid 78)"));
        ASSERT_INT_EQ(count_kind(&l, WRITER_IOTUNED), 2);
        writer_list_done(&l);
}

TEST(for_knob) {
        WriterList l = scan_basic();
        const Writer *w;

        /* Two YES rules: the later one acts last. */
        w = writers_for_knob(&l, "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->source, "/etc/udev/rules.d/60-io.rules:10");
        /* The udev rule and the TuneD [sysfs] entry: TuneD acts after udev. */
        w = writers_for_knob(&l, "nr_requests");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->source, "/etc/tuned/iotest/tuned.conf:10");
        /* Nothing names it: another iotuned writes every knob. */
        w = writers_for_knob(&l, "nomerges");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->who, "another iotuned (pid 78)");
        writer_list_done(&l);

        /* A YES before a MAYBE, whatever the order. */
        Writer items[] = {
                {.kind = WRITER_UDEV_RULE,
                 .who = (char *) "udev rule",
                 .knob = (char *) "scheduler",
                 .source = (char *) "a:1",
                 .match = WRITER_MATCH_YES},
                {.kind = WRITER_UDEV_RULE,
                 .who = (char *) "udev rule",
                 .knob = (char *) "scheduler",
                 .source = (char *) "b:1",
                 .match = WRITER_MATCH_MAYBE},
                {.kind = WRITER_UDEV_RULE,
                 .who = (char *) "udev rule",
                 .knob = (char *) "scheduler",
                 .source = (char *) "c:1",
                 .match = WRITER_MATCH_NO},
        };
        WriterList fake = {items, 3};
        w = writers_for_knob(&fake, "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->source, "a:1");
        fake.n = 1;
        fake.items = &items[1];
        ASSERT_STREQ(writers_for_knob(&fake, "scheduler")->source, "b:1");
        fake.items = &items[2];
        ASSERT_TRUE(!writers_for_knob(&fake, "scheduler"));
        ASSERT_TRUE(!writers_for_knob(&fake, "nr_requests"));
}

TEST(for_drift_names_the_one_that_wrote_the_value_seen) {
        Writer items[] = {
                /* matches, but writes what iotuned wants too */
                {.kind = WRITER_UDEV_RULE, .who = (char *) "udev rule", .knob = (char *) "scheduler",
                 .value = (char *) "none", .source = (char *) "a:1", .match = WRITER_MATCH_YES, .on_add = true},
                /* the one that leaves mq-deadline, on change events */
                {.kind = WRITER_UDEV_RULE, .who = (char *) "udev rule", .knob = (char *) "scheduler",
                 .value = (char *) "mq-deadline", .source = (char *) "b:1", .match = WRITER_MATCH_YES,
                 .on_add = true, .on_change = true},
                /* later, same value, add only */
                {.kind = WRITER_UDEV_RULE, .who = (char *) "udev rule", .knob = (char *) "scheduler",
                 .value = (char *) "mq-deadline", .source = (char *) "c:1", .match = WRITER_MATCH_YES,
                 .on_add = true},
                /* TuneD not running: writes nothing now */
                {.kind = WRITER_TUNED, .who = (char *) "TuneD profile 'x'", .knob = (char *) "scheduler",
                 .value = (char *) "mq-deadline", .source = (char *) "d:1", .match = WRITER_MATCH_YES,
                 .dormant = true},
        };
        WriterList l = {items, ELEMENTSOF(items)};

        ASSERT_STREQ(writers_for_drift(&l, "scheduler", "mq-deadline", "change")->source, "b:1");
        /* seen at a drift check: the later of the two that write it */
        ASSERT_STREQ(writers_for_drift(&l, "scheduler", "mq-deadline", NULL)->source, "c:1");
        /* At udev's "add": both run on it, the later acts last. */
        ASSERT_STREQ(writers_for_drift(&l, "scheduler", "mq-deadline", "add")->source, "c:1");
        ASSERT_STREQ(writers_for_drift(&l, "scheduler", "none", NULL)->source, "a:1");
        ASSERT_TRUE(!writers_for_drift(&l, "scheduler", "kyber", NULL));
        ASSERT_TRUE(!writers_for_drift(&l, "nr_requests", "64", NULL));
}

TEST(findings) {
        WriterList l = scan_basic();
        FindingList f = {};

        ASSERT_INT_EQ(writers_findings(&l, "nvme0n1", &f), 0);
        /* YES/MAYBE only: udev :2 :6 :9 :10 :12, TuneD nr_requests and irq, irqbalance, 2 iotuned. */
        ASSERT_INT_EQ(f.n, 10);
        ASSERT_STREQ(f.items[0].kind, "udev-rule-writer");
        ASSERT_STREQ(f.items[0].device, "nvme0n1");
        ASSERT_STREQ(f.items[0].knob, "scheduler");
        ASSERT_STREQ(f.items[0].source, "/etc/udev/rules.d/60-io.rules:2");
        ASSERT_INT_EQ(f.items[0].severity, FINDING_WARNING);
        ASSERT_STREQ(f.items[0].summary, "/etc/udev/rules.d/60-io.rules:2 sets scheduler=mq-deadline on add|change "
                                         "events (KERNEL==\"nvme[0-9]*n[0-9]*\" matches nvme0n1)");
        ASSERT_STREQ(f.items[1].summary,
                     "/etc/udev/rules.d/60-io.rules:6 sets nr_requests=256 on add events (SUBSYSTEM==\"block\" matches "
                     "\"block\"; ENV{ID_MODEL}==\"QEMU*\" matches \"QEMU NVMe Ctrl\")");

        for (size_t i = 0; i < f.n; i++) {
                const Finding *x = &f.items[i];
                if (streq(x->kind, "tuned-writer") && streq(x->knob, "nr_requests")) {
                        ASSERT_INT_EQ(x->severity, FINDING_WARNING);
                        ASSERT_STREQ(x->summary, "/etc/tuned/iotest/tuned.conf:10 (TuneD profile 'iotest') sets "
                                                 "nr_requests=128 ([sysfs] /sys/block/nvme*/queue/nr_requests matches "
                                                 "/sys/block/nvme0n1/queue/nr_requests; tuned is running (pid 500))");
                } else if (streq(x->kind, "tuned-writer")) {
                        ASSERT_STREQ(x->knob, "irq_affinity");
                        ASSERT_INT_EQ(x->severity, FINDING_NOTICE);
                } else if (streq(x->kind, "irqbalance-writer")) {
                        ASSERT_INT_EQ(x->severity, FINDING_NOTICE);
                        ASSERT_TRUE(!x->source);
                        ASSERT_STREQ(x->summary,
                                     "irqbalance (pid 412): moves vectors it has not been told to leave alone (banned)");
                } else if (streq(x->kind, "iotuned-writer")) {
                        ASSERT_INT_EQ(x->severity, FINDING_WARNING);
                        ASSERT_STREQ(x->knob, "*");
                } else
                        ASSERT_STREQ(x->kind, "udev-rule-writer");
        }
        finding_list_done(&f);
        writer_list_done(&l);
}

TEST(findings_maybe) {
        Writer items[] = {
                {.kind = WRITER_UDEV_RULE,
                 .who = (char *) "udev rule",
                 .knob = (char *) "read_ahead_kb",
                 .source = (char *) "/etc/udev/rules.d/x.rules:4",
                 .match = WRITER_MATCH_MAYBE,
                 .why = (char *) "ATTRS{model}==\"X\" not evaluated",
                 .on_add = true},
                {.kind = WRITER_TUNED,
                 .who = (char *) "TuneD profile 'p'",
                 .knob = (char *) "scheduler",
                 .value = (char *) "none",
                 .source = (char *) "/etc/tuned/p/tuned.conf:3",
                 .match = WRITER_MATCH_YES,
                 .why = (char *) "[disk] has no devices=: applies to every disk; tuned is not running",
                 .dormant = true},
        };
        WriterList l = {items, 2};
        FindingList f = {};

        ASSERT_INT_EQ(writers_findings(&l, "sda", &f), 0);
        ASSERT_INT_EQ(f.n, 2);
        ASSERT_INT_EQ(f.items[0].severity, FINDING_NOTICE);
        ASSERT_STREQ(f.items[0].summary, "/etc/udev/rules.d/x.rules:4 may write read_ahead_kb (value not known) on add "
                                         "events (ATTRS{model}==\"X\" not evaluated)");
        ASSERT_INT_EQ(f.items[1].severity, FINDING_NOTICE); /* TuneD does not run */
        ASSERT_STREQ(f.items[1].summary,
                     "/etc/tuned/p/tuned.conf:3 (TuneD profile 'p') sets scheduler=none ([disk] has "
                     "no devices=: applies to every disk; tuned is not running)");
        finding_list_done(&f);
}

/* Masks, duplicates through /lib -> usr/lib, a FIFO, a huge file, garbage. */
TEST(hostile_tree) {
        char *t = tmpdir_new();
        _cleanup_(device_freep) Device *d = nvme0n1(t);
        _cleanup_free_ char *fifo = NULL, *huge = NULL, *big = NULL, *garbage = NULL;
        WriterList l = {};
        const Writer *w;
        FILE *f;

        tmpdir_write(t, "etc/udev/rules.d/50-a.rules", "KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"none\"\n");
        tmpdir_write(t, "usr/lib/udev/rules.d/50-a.rules", "KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"bfq\"\n");
        tmpdir_write(t, "usr/lib/udev/rules.d/70-m.rules", "KERNEL==\"nvme*\", ATTR{queue/nomerges}=\"2\"\n");
        tmpdir_symlink(t, "etc/udev/rules.d/70-m.rules", "/dev/null");
        tmpdir_symlink(t, "lib", "usr/lib");
        /* A FIFO where a rules file should be: skipped, never opened for a blocking read;
         * the /usr/lib file of that name is then the rules file. */
        fifo = path_join(t, "etc/udev/rules.d/10-fifo.rules");
        ASSERT_TRUE(mkfifo(fifo, 0644) == 0);
        tmpdir_write(t, "usr/lib/udev/rules.d/10-fifo.rules", "KERNEL==\"nvme*\", ATTR{queue/iostats}=\"0\"\n");
        /* More than the 1 MiB cap: skipped as a whole. */
        huge = path_join(t, "etc/udev/rules.d/20-huge.rules");
        f = fopen(huge, "we");
        ASSERT_TRUE(f);
        fputs("KERNEL==\"nvme*\", ATTR{queue/add_random}=\"1\"\n", f);
        for (int i = 0; i < 40000; i++)
                fputs("# padding padding padding padding padding padding\n", f);
        fclose(f);
        /* Garbage, then one good rule that must still be found. */
        big = malloc(40000);
        ASSERT_TRUE(big);
        memset(big, 'A', 39999);
        big[39999] = 0;
        garbage = path_join(t, "etc/udev/rules.d/30-garbage.rules");
        f = fopen(garbage, "we");
        ASSERT_TRUE(f);
        fputs("ATTR{queue/scheduler}=\"unterminated\n"
              "KERNEL==\"nvme*\" ATTR{queue/scheduler}\n"
              "BOGUS==\"x\", ATTR{queue/scheduler}=\"bogus\"\n"
              "KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"a\"junk\n"
              "ATTR{queue/scheduler=\"x\"\n"
              "\\\n\\\n,,,,\n=\n\"\"\"\n{}{}{}\n",
              f);
        fputs("KERNEL==\"", f);
        fputs(big, f); /* a 40 kB line: over the line cap */
        fputs("\", ATTR{queue/scheduler}=\"long\"\n", f);
        fputc(0x01, f);
        fputs("\xff\xfe\n", f);
        fputs("KERNEL==\"nvme*\", ATTR{queue/max_sectors_kb}=\"512\"\n", f);
        fclose(f);
        /* A TuneD include loop, and a profile name that leaves the tree. */
        tmpdir_write(t, "etc/tuned/active_profile", "loop-a ../../../etc\n");
        tmpdir_write(t, "etc/tuned/loop-a/tuned.conf", "[main]\ninclude=loop-b\n[disk]\nelevator=kyber\n");
        tmpdir_write(t, "etc/tuned/loop-b/tuned.conf", "[main]\ninclude=loop-a\n");
        /* One iotuned besides us: the daemon, not another writer. */
        tmpdir_write(t, "proc/9/comm", "iotuned\n");
        tmpdir_write(t, "proc/self/comm", "tuned\n");

        alarm(20); /* a blocking open of the FIFO would hang: fail instead */
        ASSERT_INT_EQ(writers_scan(t, d, &l), 0);
        alarm(0);

        w = find(&l, "/etc/udev/rules.d/50-a.rules:1", "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "none");
        w = find(&l, "/usr/lib/udev/rules.d/10-fifo.rules:1", "iostats");
        ASSERT_TRUE(w);
        w = find(&l, "/etc/udev/rules.d/30-garbage.rules:14", "max_sectors_kb");
        ASSERT_TRUE(w);
        ASSERT_INT_EQ(w->match, WRITER_MATCH_YES);
        w = find(&l, "/etc/tuned/loop-a/tuned.conf:4", "scheduler");
        ASSERT_TRUE(w);
        ASSERT_STREQ(w->value, "kyber");
        ASSERT_STREQ(w->why, "[disk] has no devices=: applies to every disk; tuned is not running");
        ASSERT_TRUE(w->dormant);
        /* Nothing else: not the masked, duplicated, huge or garbage ones, no iotuned. */
        ASSERT_INT_EQ(l.n, 4);
        writer_list_done(&l);
        tmpdir_remove(t);
}

TEST(goto_note) {
        char *t = tmpdir_new();
        _cleanup_(device_freep) Device *d = nvme0n1(t);
        WriterList l = {};

        tmpdir_write(t, "etc/udev/rules.d/60-g.rules",
                     "SUBSYSTEM!=\"block\", GOTO=\"end\"\n"
                     "KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"none\"\n"
                     "LABEL=\"end\"\n"
                     "KERNEL==\"nvme*\", ATTR{queue/nr_requests}=\"64\"\n"
                     "KERNEL==\"nvme*\", RUN+=\"/bin/sh -c 'echo 3 > /proc/irq/30/smp_affinity_list'\"\n"
                     "KERNEL==\"nvme*\", RUN+=\"/usr/bin/tune.sh /sys/block/%k/queue/rq_affinity\"\n");
        ASSERT_INT_EQ(writers_scan(t, d, &l), 0);
        ASSERT_INT_EQ(l.n, 4);
        ASSERT_STREQ(l.items[0].why,
                     "KERNEL==\"nvme*\" matches nvme0n1; GOTO=\"end\" at line 1 may skip it (not followed)");
        ASSERT_STREQ(l.items[1].why, "KERNEL==\"nvme*\" matches nvme0n1");
        ASSERT_STREQ(l.items[2].knob, "irq_affinity");
        ASSERT_STREQ(l.items[2].value, "3");
        ASSERT_STREQ(l.items[3].knob, "rq_affinity");
        ASSERT_TRUE(!l.items[3].value);
        writer_list_done(&l);
        tmpdir_remove(t);
}

/* Files that cost work, not memory: every one must be bounded (the daemon scans
 * at a setting's first drift, inside its event loop). */
TEST(hostile_cost_is_bounded) {
        char *t = tmpdir_new();
        _cleanup_(device_freep) Device *d = nvme0n1(t);
        _cleanup_free_ char *rules = path_join(t, "etc/udev/rules.d/40-cost.rules"),
                            *conf = path_join(t, "etc/tuned/wide/tuned.conf");
        WriterList l = {};
        size_t udev = 0;
        FILE *f;

        /* include= fanning out to itself: 12^8 loads without a budget */
        tmpdir_write(t, "etc/tuned/active_profile", "fan wide\n");
        tmpdir_write(t, "etc/tuned/fan/tuned.conf", "[main]\ninclude=fan,fan,fan,fan,fan,fan,fan,fan,fan,fan,fan,fan\n"
                                                    "[disk]\nelevator=kyber\n");
        /* 100000 distinct keys in one section */
        tmpdir_write(t, "etc/tuned/wide/tuned.conf", "");
        f = fopen(conf, "we");
        ASSERT_TRUE(f);
        fputs("[disk]\nelevator=bfq\n", f);
        for (int i = 0; i < 100000; i++)
                fprintf(f, "k%d=v\n", i);
        fclose(f);
        /* 3000 GOTO/LABEL pairs, then 1000 writers */
        tmpdir_write(t, "etc/udev/rules.d/40-cost.rules", "");
        f = fopen(rules, "we");
        ASSERT_TRUE(f);
        for (int i = 0; i < 3000; i++)
                fprintf(f, "KERNEL==\"x\", GOTO=\"l%d\"\nLABEL=\"l%d\"\n", i, i);
        for (int i = 0; i < 1000; i++)
                fputs("KERNEL==\"nvme*\", ATTR{queue/scheduler}=\"mq-deadline\"\n", f);
        fclose(f);
        /* a rules file that links to a device: refused before it is opened */
        tmpdir_symlink(t, "etc/udev/rules.d/50-dev.rules", "/dev/zero");

        /* Unbounded, these took 4.4 s, 79 s and 36 s; bounded, tens of ms. What is
         * asserted is the bound's outcome, not a time a loaded machine could miss;
         * the alarm is only a backstop against a hang. */
        alarm(120);
        ASSERT_INT_EQ(writers_scan(t, d, &l), 0);
        alarm(0);
        for (size_t i = 0; i < l.n; i++)
                udev += l.items[i].kind == WRITER_UDEV_RULE;
        ASSERT_INT_EQ(udev, 256); /* the first ones of the file, bounded */
        ASSERT_TRUE(writers_for_knob(&l, "scheduler"));
        /* the second profile was still read after the first one's fan-out was cut
         * off: its elevator is the merged one */
        bool bfq = false;
        for (size_t i = 0; i < l.n; i++)
                bfq = bfq || (l.items[i].kind == WRITER_TUNED && streq_ptr(l.items[i].value, "bfq"));
        ASSERT_TRUE(bfq);
        writer_list_done(&l);
        tmpdir_remove(t);
}

TEST_MAIN(T(udev_legacy_rule), T(udev_continuation_env), T(udev_masked_by_etc), T(udev_attrs_parent_walk),
          T(udev_run_echo), T(tuned_profile), T(processes), T(for_knob), T(findings), T(findings_maybe),
          T(hostile_tree), T(goto_note), T(hostile_cost_is_bounded), T(for_drift_names_the_one_that_wrote_the_value_seen))
