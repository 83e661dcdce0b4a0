/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics textfile is written only into a directory its owner alone writes. */
#include <sys/stat.h>

#include "knob.h"
#include "macro.h"
#include "metrics.h"
#include "tests.h"
#include "tmpdir.h"

TEST(metrics_dir_must_be_private) {
        char *t = tmpdir_new();
        _cleanup_free_ char *dir = path_join(t, "prom"), *file = path_join(t, "prom/iotuned.prom"),
                            *missing = path_join(t, "none/iotuned.prom"), *notdir = path_join(t, "f/x.prom");
        char *reason = NULL;

        ASSERT_INT_EQ(mkdir(dir, 0755), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), 0);
        ASSERT_TRUE(reason == NULL);

        ASSERT_INT_EQ(chmod(dir, 0775), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, dir) && strstr(reason, "mode 0775"));
        free(reason);
        reason = NULL;

        ASSERT_INT_EQ(chmod(dir, 01777), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, "mode 1777"));
        free(reason);
        reason = NULL;

        ASSERT_INT_EQ(chmod(dir, 0755), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid() + 1, &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, "owner uid"));
        free(reason);
        reason = NULL;

        /* Not there yet: the writer creates it (root's, 0755). */
        ASSERT_INT_EQ(metrics_check_dir(missing, getuid(), &reason), 0);

        tmpdir_write(t, "f", "x");
        ASSERT_INT_EQ(metrics_check_dir(notdir, getuid(), &reason), -ENOTDIR);
        free(reason);
        tmpdir_remove(t);
}

TEST(per_disk_load_drifts_and_findings_one_series_each) {
        Config c = {};
        MetricsCounters m = {};
        Device d = { .name = (char *) "nvme0n1" }, odd = { .name = (char *) "a\"b\\c" };
        Setting s[] = {
                { .knob = knob_by_name("scheduler"), .irq = -1, .rt = { .drifts = 5 } },
                { .knob = knob_by_name("nr_requests"), .irq = -1 },
                { .knob = knob_by_name("irq_affinity"), .irq = 40, .rt = { .drifts = 1 } },
                { .knob = knob_by_name("irq_affinity"), .irq = 41, .rt = { .drifts = 2 } },
        };
        DevicePlan p1 = { .device = &d, .settings = s, .n_settings = ELEMENTSOF(s), .has_load = true,
                          .load = { .queue_depth = 31.5, .await_ms = 12.5, .utilisation = 0.64, .iops = 2500 } };
        Setting s2[] = { { .knob = knob_by_name("nomerges"), .irq = -1, .rt = { .drifts = 1 } } };
        DevicePlan p2 = { .device = &odd, .settings = s2, .n_settings = 1 };
        DevicePlan *all[] = { &p1, &p2 };
        Plan plan = { .devices = all, .n = 2 };
        _cleanup_free_ char *text = NULL;

        ASSERT_TRUE(finding_add(&p1.findings, "nvme0n1", "software-queue", FINDING_WARNING, "scheduler", NULL, "x"));
        ASSERT_TRUE(finding_add(&p1.findings, "nvme0n1", "io-load", FINDING_INFO, NULL, NULL, "y"));
        ASSERT_INT_EQ(metrics_format(&c, &plan, &m, &text), 0);
        ASSERT_TRUE(strstr(text, "iotuned_device_queue_depth{device=\"nvme0n1\"} 31.5\n"));
        ASSERT_TRUE(strstr(text, "iotuned_device_await_seconds{device=\"nvme0n1\"} 0.0125\n"));
        ASSERT_TRUE(strstr(text, "iotuned_device_utilisation_ratio{device=\"nvme0n1\"} 0.64\n"));
        ASSERT_TRUE(strstr(text, "iotuned_device_iops{device=\"nvme0n1\"} 2500\n"));
        ASSERT_TRUE(strstr(text, "iotuned_setting_drifts_total{device=\"nvme0n1\",knob=\"scheduler\"} 5\n"));
        ASSERT_TRUE(strstr(text, "iotuned_setting_drifts_total{device=\"nvme0n1\",knob=\"nr_requests\"} 0\n"));
        /* a disk's vectors summed under their knob: one series, not one per vector */
        ASSERT_TRUE(strstr(text, "iotuned_setting_drifts_total{device=\"nvme0n1\",knob=\"irq_affinity\"} 3\n"));
        ASSERT_TRUE(strstr(text, "iotuned_device_findings{device=\"nvme0n1\",kind=\"software-queue\","
                                 "severity=\"warning\"} 1\n"));
        ASSERT_TRUE(!strstr(text, "kind=\"io-load\"")); /* info findings are measurements, not series */
        /* no load sampled yet: no load series; label values escaped */
        ASSERT_TRUE(!strstr(text, "iotuned_device_queue_depth{device=\"a"));
        ASSERT_TRUE(strstr(text, "iotuned_setting_drifts_total{device=\"a\\\"b\\\\c\",knob=\"nomerges\"} 1\n"));
        finding_list_done(&p1.findings);
}

TEST_MAIN(T(metrics_dir_must_be_private), T(per_disk_load_drifts_and_findings_one_series_each))
