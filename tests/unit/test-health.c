/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drive health and poll-queue use: the SMART / Identify / APST decoders fed bytes
 * laid out by the NVMe Base Specification 2.0 offsets (not by libnvme's structs,
 * so a layout mistake shows), the blk-mq debugfs reader on fixture trees of 5.15,
 * 6.1 and 6.12 and on hostile ones, and the findings drawn from both. */
#include <endian.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "finding.h"
#include "hctx-stats.h"
#include "health.h"
#include "nvme-health.h"
#include "tests.h"
#include "tmpdir.h"

static void put_le16(uint8_t *b, size_t off, uint16_t v) {
        b[off] = v & 0xff;
        b[off + 1] = v >> 8;
}

static void put_le32(uint8_t *b, size_t off, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                b[off + i] = (v >> (8 * i)) & 0xff;
}

static void put_le64(uint8_t *b, size_t off, uint64_t v) {
        for (unsigned i = 0; i < 8; i++)
                b[off + i] = (v >> (8 * i)) & 0xff;
}

static const Finding *find_kind(const FindingList *l, const char *kind) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].kind, kind))
                        return &l->items[i];
        return NULL;
}

static double value_of(const Finding *f, const char *name) {
        for (size_t i = 0; i < f->n_values; i++)
                if (streq(f->values[i].name, name))
                        return f->values[i].value;
        return -12345.0; /* no such value: no assertion expects this */
}

/* SMART / Health Information log page, NVMe 2.0 figure 207. */
static void smart_bytes(uint8_t raw[512]) {
        memset(raw, 0, 512);
        raw[0] = 0x06;                                    /* temperature, reliability degraded */
        put_le16(raw, 1, 0x0157);                         /* 343 K = 70 C */
        raw[3] = 95;                                      /* available spare */
        raw[4] = 10;                                      /* threshold */
        raw[5] = 3;                                       /* percent used */
        put_le64(raw, 128, 0x1234);                       /* power on hours 4660 */
        put_le64(raw, 144, 7);                            /* unsafe shutdowns */
        put_le64(raw, 160, 2);                            /* media errors */
        put_le64(raw, 176, UINT64_C(0x0102030405060708)); /* error log entries */
        put_le32(raw, 192, 5);                            /* warning composite temperature time, min */
        put_le32(raw, 196, 1);                            /* critical composite temperature time, min */
        put_le32(raw, 216, 11);                           /* TMT1 transitions */
        put_le32(raw, 220, 2);                            /* TMT2 transitions */
        put_le32(raw, 224, 600);                          /* TMT1 total time, s */
        put_le32(raw, 228, 30);                           /* TMT2 total time, s */
}

TEST(smart_decoded_from_spec_offsets) {
        uint8_t raw[512];
        struct nvme_smart_log log;
        NvmeHealth h = {};

        ASSERT_INT_EQ(sizeof(log), 512);
        smart_bytes(raw);
        memcpy(&log, raw, sizeof(log));
        nvme_health_from_smart(&log, &h);
        ASSERT_INT_EQ(h.critical_warning, 0x06);
        ASSERT_INT_EQ(h.temperature_c, 70);
        ASSERT_INT_EQ(h.available_spare, 95);
        ASSERT_INT_EQ(h.spare_threshold, 10);
        ASSERT_INT_EQ(h.percent_used, 3);
        ASSERT_TRUE(h.power_on_hours == 4660);
        ASSERT_TRUE(h.unsafe_shutdowns == 7);
        ASSERT_TRUE(h.media_errors == 2);
        ASSERT_TRUE(h.num_err_log_entries == UINT64_C(0x0102030405060708));
        ASSERT_INT_EQ(h.warning_temp_time_min, 5);
        ASSERT_INT_EQ(h.critical_comp_time_min, 1);
        ASSERT_INT_EQ(h.thm_transitions[0], 11);
        ASSERT_INT_EQ(h.thm_transitions[1], 2);
        ASSERT_INT_EQ(h.thm_total_time_s[0], 600);
        ASSERT_INT_EQ(h.thm_total_time_s[1], 30);

        /* A 128-bit counter with its high half set saturates instead of wrapping. */
        raw[160 + 8] = 1; /* media errors = 2^64 + 2 */
        raw[128 + 15] = 0x80;
        memcpy(&log, raw, sizeof(log));
        nvme_health_from_smart(&log, &h);
        ASSERT_TRUE(h.media_errors == UINT64_MAX);
        ASSERT_TRUE(h.power_on_hours == UINT64_MAX);
        ASSERT_TRUE(h.unsafe_shutdowns == 7);

        /* 0 K and 0xffff K do not wrap an int. */
        put_le16(raw, 1, 0);
        memcpy(&log, raw, sizeof(log));
        nvme_health_from_smart(&log, &h);
        ASSERT_INT_EQ(h.temperature_c, -273);
        put_le16(raw, 1, 0xffff);
        memcpy(&log, raw, sizeof(log));
        nvme_health_from_smart(&log, &h);
        ASSERT_INT_EQ(h.temperature_c, 65535 - 273);
}

/* Identify Controller, NVMe 2.0 figure 275/276: NPSS byte 263, APSTA 265, WCTEMP
 * 267:266, CCTEMP 269:268, power state descriptors from 2048, 32 bytes each
 * (flags byte 3: bit 1 NOPS; ENLAT 7:4; EXLAT 11:8). */
static void psd_bytes(uint8_t *raw, unsigned ps, bool nonop, uint32_t enlat, uint32_t exlat) {
        size_t o = 2048 + 32 * (size_t) ps;
        put_le16(raw, o, 500);
        raw[o + 3] = nonop ? 0x02 : 0x00;
        put_le32(raw, o + 4, enlat);
        put_le32(raw, o + 8, exlat);
}

static void id_ctrl_bytes(uint8_t raw[4096]) {
        memset(raw, 0, 4096);
        raw[263] = 4;            /* NPSS: PS0..PS4 */
        raw[265] = 0x01;         /* APSTA */
        put_le16(raw, 266, 353); /* WCTEMP 80 C */
        put_le16(raw, 268, 358); /* CCTEMP 85 C */
        psd_bytes(raw, 0, false, 0, 0);
        psd_bytes(raw, 1, false, 0, 0);
        psd_bytes(raw, 2, false, 0, 0);
        psd_bytes(raw, 3, true, 1000, 2000); /* total 3000 */
        psd_bytes(raw, 4, true, 5000, 8000); /* total 13000 */
}

TEST(id_ctrl_thresholds) {
        uint8_t raw[4096];
        struct nvme_id_ctrl id;
        NvmeHealth h = {};

        ASSERT_INT_EQ(sizeof(id), 4096);
        id_ctrl_bytes(raw);
        memcpy(&id, raw, sizeof(id));
        nvme_health_from_id_ctrl(&id, &h);
        ASSERT_INT_EQ(h.warning_temp_c, 80);
        ASSERT_INT_EQ(h.critical_temp_c, 85);
        ASSERT_TRUE(h.apst_supported);

        /* 0 = not reported, and APSTA clear */
        put_le16(raw, 266, 0);
        put_le16(raw, 268, 0);
        raw[265] = 0;
        memcpy(&id, raw, sizeof(id));
        nvme_health_from_id_ctrl(&id, &h);
        ASSERT_INT_EQ(h.warning_temp_c, 0);
        ASSERT_INT_EQ(h.critical_temp_c, 0);
        ASSERT_TRUE(!h.apst_supported);
}

/* An APST entry: ITPS bits 7:3, ITPT bits 31:8 (ms). */
static void apst_entry(uint8_t *table, unsigned from, unsigned to, uint32_t idle_ms) {
        put_le64(table, 8 * (size_t) from, (uint64_t) to << 3 | (uint64_t) idle_ms << 8);
}

TEST(apst_table_worst_latencies) {
        uint8_t raw[4096], table[256] = {};
        struct nvme_id_ctrl id;
        NvmeHealth h = {};

        id_ctrl_bytes(raw);
        memcpy(&id, raw, sizeof(id));

        /* As drivers/nvme/host/core.c: nvme_configure_apst builds it: PS0-2 go to
         * PS3 after 150 ms, PS3 to PS4 after 650 ms. */
        apst_entry(table, 0, 3, 150);
        apst_entry(table, 1, 3, 150);
        apst_entry(table, 2, 3, 150);
        apst_entry(table, 3, 4, 650);
        apst_entry(table, 10, 7, 100); /* beyond NPSS: reserved, ignored */
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), 4);
        ASSERT_INT_EQ(h.apst_target_states, 0x18);
        ASSERT_INT_EQ(h.apst_worst_exit_us, 8000);
        ASSERT_INT_EQ(h.apst_worst_total_us, 13000);
        ASSERT_INT_EQ(h.apst_worst_state, 4);

        /* Only PS3 in use. */
        memset(table, 0, sizeof(table));
        apst_entry(table, 0, 3, 100);
        apst_entry(table, 1, 4, 0); /* ITPT 0: unused, whatever its ITPS */
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), 1);
        ASSERT_INT_EQ(h.apst_target_states, 0x08);
        ASSERT_INT_EQ(h.apst_worst_exit_us, 2000);
        ASSERT_INT_EQ(h.apst_worst_total_us, 3000);
        ASSERT_INT_EQ(h.apst_worst_state, 3);

        /* An operational target is used but is no sleep. */
        memset(table, 0, sizeof(table));
        apst_entry(table, 0, 2, 100);
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), 1);
        ASSERT_INT_EQ(h.apst_target_states, 0);
        ASSERT_INT_EQ(h.apst_worst_total_us, 0);

        /* A zeroed table (APSTE 0, as the kernel sends it). */
        memset(table, 0, sizeof(table));
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), 0);
        ASSERT_INT_EQ(h.apst_target_states, 0);

        /* A target beyond NPSS is garbage: refused, h untouched. */
        apst_entry(table, 0, 3, 100);
        apst_entry(table, 1, 9, 100);
        h.apst_worst_exit_us = 777;
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), -EBADMSG);
        ASSERT_INT_EQ(h.apst_worst_exit_us, 777);

        /* Latencies near 2^32 do not wrap the total. */
        put_le32(raw, 2048 + 32 * 4 + 4, UINT32_MAX);
        put_le32(raw, 2048 + 32 * 4 + 8, UINT32_MAX);
        memcpy(&id, raw, sizeof(id));
        memset(table, 0, sizeof(table));
        apst_entry(table, 3, 4, 100);
        ASSERT_INT_EQ(nvme_health_from_apst_table(table, &id, &h), 1);
        ASSERT_TRUE(h.apst_worst_exit_us == UINT32_MAX);
        ASSERT_TRUE(h.apst_worst_total_us == UINT32_MAX);
}

TEST(read_without_device_node_is_recorded) {
        NvmeCtrl c = {.name = (char *) "nvme0"};
        NvmeHealth h = {};
        char *dir = tmpdir_new(), *p = NULL;

        ASSERT_INT_EQ(nvme_health_read(&c, &h), 0);
        ASSERT_TRUE(!h.smart_read);
        ASSERT_STREQ(h.smart_error, "the controller has no device node");
        ASSERT_TRUE(!h.apst_known);
        nvme_health_done(&h);

        /* A regular file (or a FIFO) at the node is not talked to, and does not block. */
        ASSERT_TRUE(asprintf(&p, "%s/nvme0", dir) > 0);
        ASSERT_INT_EQ(mkfifo(p, 0600), 0);
        c.devnode = p;
        alarm(10);
        ASSERT_INT_EQ(nvme_health_read(&c, &h), 0);
        alarm(0);
        ASSERT_TRUE(!h.smart_read);
        ASSERT_TRUE(strstr(h.smart_error, "not a character device") != NULL);
        nvme_health_done(&h);
        free(p);
        tmpdir_remove(dir);
}

/* A decoded healthy drive: 40 C, thresholds 80/85, APST on to PS4 (13 ms). */
static NvmeHealth healthy(void) {
        return (NvmeHealth){
                .smart_read = true,
                .temperature_c = 40,
                .warning_temp_c = 80,
                .critical_temp_c = 85,
                .available_spare = 100,
                .spare_threshold = 10,
                .percent_used = 3,
                .power_on_hours = 4660,
                .unsafe_shutdowns = 7,
                .num_err_log_entries = 12,
                .apst_known = true,
                .apst_supported = true,
                .apst_enabled = true,
                .apst_target_states = 0x18,
                .apst_worst_exit_us = 8000,
                .apst_worst_total_us = 13000,
                .apst_worst_state = 4,
        };
}

TEST(findings_of_a_healthy_drive) {
        NvmeHealth h = healthy();
        FindingList l = {};
        const Finding *f;

        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_INT_EQ(l.n, 2);
        f = find_kind(&l, "smart");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(f->device, "nvme0");
        ASSERT_STREQ(f->summary, "composite temperature 40 C (warning 80 C, critical 85 C), available spare 100% "
                                 "(threshold 10%), 3% of rated life used, 0 media errors, 4660 power-on hours, 7 "
                                 "unsafe shutdowns");
        ASSERT_TRUE(value_of(f, "temperature_c") == 40);
        ASSERT_TRUE(value_of(f, "available_spare_pct") == 100);
        ASSERT_TRUE(value_of(f, "spare_threshold_pct") == 10);
        ASSERT_TRUE(value_of(f, "percent_used") == 3);
        ASSERT_TRUE(value_of(f, "media_errors") == 0);
        ASSERT_TRUE(value_of(f, "power_on_hours") == 4660);
        ASSERT_TRUE(value_of(f, "error_log_entries") == 12);
        f = find_kind(&l, "apst-exit-latency");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_STREQ(f->knob, "apst");
        ASSERT_TRUE(strstr(f->summary, "PS4, 13000 us entry + exit latency (worst exit latency 8000 us)"));
        ASSERT_TRUE(value_of(f, "apst_worst_total_us") == 13000);
        ASSERT_TRUE(value_of(f, "apst_worst_exit_us") == 8000);
        ASSERT_TRUE(value_of(f, "apst_worst_state") == 4);
        ASSERT_INT_EQ(finding_list_worst(&l), FINDING_NOTICE);
        finding_list_done(&l);

        /* Under 10 ms: INFO with the numbers. */
        h.apst_worst_total_us = 9999;
        h.apst_worst_state = 3;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "apst-exit-latency");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(f->summary, "APST is on: deepest wake-up PS3, 9999 us entry + exit latency (worst exit "
                                 "latency 8000 us)");
        finding_list_done(&l);

        /* APST off, and absent. */
        h.apst_enabled = false;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "apst-exit-latency");
        ASSERT_TRUE(f && f->severity == FINDING_INFO && strstr(f->summary, "APST is off"));
        ASSERT_TRUE(value_of(f, "apst_enabled") == 0);
        finding_list_done(&l);
        h.apst_supported = false;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "apst-exit-latency");
        ASSERT_TRUE(f && f->severity == FINDING_INFO && strstr(f->summary, "no autonomous power state"));
        finding_list_done(&l);

        /* APST not read while SMART was. */
        h.apst_known = false;
        h.apst_error = (char *) "controller answered Get Features 0x0c (APST) with status 0x2";
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_INT_EQ(l.n, 2);
        f = find_kind(&l, "apst-unknown");
        ASSERT_TRUE(f && f->severity == FINDING_INFO);
        ASSERT_STREQ(f->summary, "APST state unknown: controller answered Get Features 0x0c (APST) with status 0x2");
        finding_list_done(&l);
}

TEST(findings_of_a_hot_failing_drive) {
        uint8_t raw[512];
        struct nvme_smart_log log;
        NvmeHealth h = healthy();
        FindingList l = {};
        const Finding *f;

        smart_bytes(raw);
        put_le16(raw, 1, 355); /* 82 C: above the warning 80, below the critical 85 */
        memcpy(&log, raw, sizeof(log));
        nvme_health_from_smart(&log, &h);
        h.apst_enabled = false;

        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_INT_EQ(l.n, 5);
        ASSERT_INT_EQ(finding_list_worst(&l), FINDING_CRITICAL);

        f = find_kind(&l, "smart-critical-warning");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_CRITICAL);
        ASSERT_STREQ(f->summary, "SMART critical warning 0x06: temperature outside a threshold, reliability degraded "
                                 "by media or internal errors");
        ASSERT_TRUE(value_of(f, "critical_warning") == 6);

        f = find_kind(&l, "thermal-throttle");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_CRITICAL);
        ASSERT_STREQ(f->summary,
                     "composite temperature 82 C is at or above the warning threshold 80 C; the drive has spent 630 s "
                     "throttled (thermal management: 600 s in 11 transitions at temperature 1, 30 s in 2 at "
                     "temperature 2), 5 min above its warning and 1 min above its critical temperature since it was "
                     "made (lifetime SMART counters): measurements on this drive may be throttled");
        ASSERT_TRUE(value_of(f, "throttled_s") == 630);
        ASSERT_TRUE(value_of(f, "warning_temp_c") == 80);
        ASSERT_TRUE(value_of(f, "critical_temp_c") == 85);
        ASSERT_TRUE(value_of(f, "temperature_c") == 82);

        f = find_kind(&l, "media-errors");
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(f->severity, FINDING_WARNING);
        ASSERT_TRUE(value_of(f, "media_errors") == 2);
        ASSERT_TRUE(strstr(f->summary, "2 media and data integrity errors"));

        f = find_kind(&l, "smart");
        ASSERT_TRUE(f && f->severity == FINDING_INFO);
        ASSERT_TRUE(value_of(f, "temperature_c") == 82);
        ASSERT_TRUE(find_kind(&l, "apst-exit-latency"));
        finding_list_done(&l);

        /* At the critical threshold. */
        h.temperature_c = 85;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "thermal-throttle");
        ASSERT_TRUE(f && str_startswith(f->summary, "composite temperature 85 C is at or above the critical "
                                                    "threshold 85 C;"));
        finding_list_done(&l);

        /* Every bit in words, the reserved ones too. */
        h.critical_warning = 0xff;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "smart-critical-warning");
        ASSERT_STREQ(f->summary, "SMART critical warning 0xff: available spare below its threshold, temperature "
                                 "outside a threshold, reliability degraded by media or internal errors, media placed "
                                 "in read-only mode, volatile memory backup device failed, persistent memory region "
                                 "read-only or unreliable, reserved bit 6, reserved bit 7");
        finding_list_done(&l);
}

TEST(throttle_history_alone_is_a_notice) {
        NvmeHealth h = healthy();
        FindingList l = {};
        const Finding *f;

        /* 40 C now, but 30 s of thermal management once. */
        h.thm_total_time_s[1] = 30;
        h.thm_transitions[1] = 1;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_INT_EQ(l.n, 3);
        f = find_kind(&l, "thermal-throttle");
        ASSERT_TRUE(f);
        /* lifetime counters: it did throttle once, it does not now */
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_TRUE(str_startswith(f->summary, "composite temperature 40 C now; the drive has spent 30 s throttled"));
        ASSERT_TRUE(str_endswith(f->summary, ": not now, but a sustained load may throttle it again"));
        ASSERT_TRUE(!find_kind(&l, "media-errors"));
        ASSERT_TRUE(!find_kind(&l, "smart-critical-warning"));
        finding_list_done(&l);

        /* The temperature bit alone. */
        h = healthy();
        h.critical_warning = NVME_SMART_CRIT_TEMPERATURE;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        f = find_kind(&l, "thermal-throttle");
        ASSERT_TRUE(f && str_startswith(f->summary, "the controller flags its temperature (40 C) as outside a "
                                                    "threshold: "));
        ASSERT_INT_EQ(f->severity, FINDING_CRITICAL);
        finding_list_done(&l);

        /* No thresholds reported: 90 C is not compared against a 0. */
        h = healthy();
        h.warning_temp_c = h.critical_temp_c = 0;
        h.temperature_c = 90;
        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_TRUE(!find_kind(&l, "thermal-throttle"));
        ASSERT_STREQ(find_kind(&l, "smart")->summary,
                     "composite temperature 90 C, available spare 100% (threshold 10%), 3% of rated life used, 0 media "
                     "errors, 4660 power-on hours, 7 unsafe shutdowns");
        finding_list_done(&l);
}

TEST(unreadable_smart) {
        NvmeHealth h = {
                .smart_error = (char *) "cannot open /dev/nvme0: Permission denied",
                .apst_error = (char *) "cannot open /dev/nvme0: Permission denied",
        };
        FindingList l = {};

        ASSERT_INT_EQ(health_findings("nvme0", &h, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "smart-unreadable");
        ASSERT_INT_EQ(l.items[0].severity, FINDING_NOTICE);
        ASSERT_STREQ(l.items[0].summary, "SMART / health log not read: cannot open /dev/nvme0: Permission denied");
        finding_list_done(&l);
}

static char *fixture_debugfs(void) {
        const char *root = getenv("IOTUNED_TEST_FIXTURES");
        char *p = NULL;

        if (!root) {
                fprintf(stderr, "# IOTUNED_TEST_FIXTURES is not set: run through meson test\n");
                abort();
        }
        if (asprintf(&p, "%s/health/debugfs", root) < 0)
                abort();
        return p;
}

TEST(hctx_stats_of_6_1) {
        _cleanup_free_ char *root = fixture_debugfs();
        HctxStats s;

        ASSERT_INT_EQ(hctx_stats_read(root, "nvme0n1", &s), 0);
        ASSERT_TRUE(s.available);
        ASSERT_TRUE(!s.why_not);
        ASSERT_INT_EQ(s.n, 4);
        for (unsigned i = 0; i < 4; i++) {
                ASSERT_INT_EQ(s.items[i].index, i);
                ASSERT_TRUE(s.items[i].has_run);
                ASSERT_TRUE(!s.items[i].has_queued);
                ASSERT_INT_EQ(s.items[i].scheduled, 0); /* empty sched_tags: "none" */
        }
        ASSERT_STREQ(s.items[0].type, "default");
        ASSERT_STREQ(s.items[1].type, "default");
        ASSERT_STREQ(s.items[2].type, "read");
        ASSERT_STREQ(s.items[3].type, "poll");
        ASSERT_INT_EQ(s.items[0].run, 1024);
        ASSERT_INT_EQ(s.items[1].run, 77);
        ASSERT_INT_EQ(s.items[2].run, 310);
        ASSERT_INT_EQ(s.items[3].run, 0);
        ASSERT_TRUE(hctx_stats_find(&s, 3) == &s.items[3]);
        ASSERT_TRUE(!hctx_stats_find(&s, 4));
        hctx_stats_done(&s);
}

TEST(hctx_stats_of_5_15_and_6_12) {
        _cleanup_free_ char *root = fixture_debugfs();
        HctxStats s;

        ASSERT_INT_EQ(hctx_stats_read(root, "nvme1n1", &s), 0);
        ASSERT_TRUE(s.available);
        ASSERT_INT_EQ(s.n, 2);
        ASSERT_TRUE(s.items[0].has_queued && s.items[0].has_run);
        ASSERT_INT_EQ(s.items[0].queued, 5000);
        ASSERT_INT_EQ(s.items[0].run, 4000);
        ASSERT_INT_EQ(s.items[0].scheduled, 1); /* sched_tags "nr_tags=62 ..." */
        ASSERT_STREQ(s.items[1].type, "poll");
        ASSERT_TRUE(s.items[1].queued == UINT64_MAX); /* "%lu" at its largest */
        hctx_stats_done(&s);

        /* 6.12: the types, no counters. */
        ASSERT_INT_EQ(hctx_stats_read(root, "nvme2n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_TRUE(strstr(s.why_not, "no per-queue counters"));
        ASSERT_INT_EQ(s.n, 2);
        ASSERT_STREQ(s.items[1].type, "poll");
        ASSERT_TRUE(!s.items[1].has_run && !s.items[1].has_queued);
        ASSERT_INT_EQ(s.items[1].scheduled, -1); /* no sched_tags in this fixture */
        hctx_stats_done(&s);
}

TEST(hctx_stats_missing) {
        _cleanup_free_ char *root = fixture_debugfs();
        char *dir = tmpdir_new();
        HctxStats s;

        ASSERT_INT_EQ(hctx_stats_read(root, "nvme9n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_STREQ(s.why_not, "no block/nvme9n1 in debugfs (not a blk-mq disk?)");
        ASSERT_INT_EQ(s.n, 0);
        hctx_stats_done(&s);

        /* An empty mount point: debugfs not mounted. */
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_TRUE(str_startswith(s.why_not, "debugfs not mounted at "));
        hctx_stats_done(&s);

        /* debugfs without block/. */
        tmpdir_write(dir, "dri/0/name", "x\n");
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_TRUE(strstr(s.why_not, "no block/ in "));
        hctx_stats_done(&s);

        /* A disk directory without hctxs (a bio-based multipath head). */
        tmpdir_write(dir, "block/nvme0n1/state", "x\n");
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_STREQ(s.why_not, "no hctx directories in block/nvme0n1");
        hctx_stats_done(&s);

        /* Not one path component. */
        ASSERT_INT_EQ(hctx_stats_read(root, "../nvme0n1", &s), -EINVAL);
        ASSERT_INT_EQ(hctx_stats_read(root, "..", &s), -EINVAL);
        ASSERT_INT_EQ(hctx_stats_read(root, "", &s), -EINVAL);
        tmpdir_remove(dir);
}

/* A tree with hctx0 (default) and hctx1 (poll), run counters as given, with an
 * I/O scheduler (sched_tags filled). */
static char *tree(const char *run0, const char *run1) {
        char *dir = tmpdir_new();
        tmpdir_write(dir, "block/nvme0n1/hctx0/type", "default\n");
        tmpdir_write(dir, "block/nvme0n1/hctx0/run", run0);
        tmpdir_write(dir, "block/nvme0n1/hctx0/sched_tags", "nr_tags=256\nnr_reserved_tags=0\n");
        tmpdir_write(dir, "block/nvme0n1/hctx1/type", "poll\n");
        tmpdir_write(dir, "block/nvme0n1/hctx1/run", run1);
        tmpdir_write(dir, "block/nvme0n1/hctx1/sched_tags", "nr_tags=256\nnr_reserved_tags=0\n");
        return dir;
}

TEST(hctx_scheduler_seen) {
        char *dir = tree("1\n", "2\n"), *p = NULL;
        HctxStats s;

        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(s.available);
        ASSERT_INT_EQ(s.items[0].scheduled, 1);
        ASSERT_INT_EQ(s.items[1].scheduled, 1);
        hctx_stats_done(&s);

        tmpdir_write(dir, "block/nvme0n1/hctx0/sched_tags", "");          /* none */
        tmpdir_write(dir, "block/nvme0n1/hctx1/sched_tags", "garbage\n"); /* not the kernel's */
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(s.available); /* the counters are fine */
        ASSERT_INT_EQ(s.items[0].scheduled, 0);
        ASSERT_INT_EQ(s.items[1].scheduled, -1);
        hctx_stats_done(&s);

        /* A FIFO there does not block either. */
        ASSERT_TRUE(asprintf(&p, "%s/block/nvme0n1/hctx0/sched_tags", dir) > 0);
        ASSERT_INT_EQ(unlink(p), 0);
        ASSERT_INT_EQ(mkfifo(p, 0600), 0);
        alarm(10);
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        alarm(0);
        ASSERT_TRUE(s.available);
        ASSERT_INT_EQ(s.items[0].scheduled, -1);
        hctx_stats_done(&s);
        free(p);
        tmpdir_remove(dir);
}

TEST(hctx_garbage_rejected) {
        static const char *const bad[] = {
                "12abc\n",
                "-5\n",
                "+5\n",
                " 5\n",
                "5 \n",
                "0x10\n",
                "\n",
                "1\n2\n",
                "99999999999999999999999\n",
                "18446744073709551616\n",
        };
        HctxStats s;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *dir = tree("100\n", bad[i]);
                ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
                if (s.available)
                        fprintf(stderr, "# accepted \"%s\"\n", bad[i]);
                ASSERT_TRUE(!s.available);
                ASSERT_STREQ(s.why_not, "hctx1/run: not a decimal counter");
                ASSERT_INT_EQ(s.n, 0); /* nothing from a tree with a bad file */
                hctx_stats_done(&s);
                tmpdir_remove(dir);
        }

        /* An unknown queue type. */
        char *dir = tree("1\n", "2\n");
        tmpdir_write(dir, "block/nvme0n1/hctx1/type", "turbo\n");
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_STREQ(s.why_not, "hctx1/type: not default, read or poll");
        hctx_stats_done(&s);
        tmpdir_remove(dir);

        /* Names that are not hctx<N> are not hctxs. */
        dir = tree("1\n", "2\n");
        tmpdir_write(dir, "block/nvme0n1/hctx01/type", "turbo\n");
        tmpdir_write(dir, "block/nvme0n1/hctx/type", "turbo\n");
        tmpdir_write(dir, "block/nvme0n1/hctx-1/type", "turbo\n");
        tmpdir_write(dir, "block/nvme0n1/hctx1x/type", "turbo\n");
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(s.available);
        ASSERT_INT_EQ(s.n, 2);
        hctx_stats_done(&s);
        tmpdir_remove(dir);
}

TEST(hctx_fifo_does_not_hang) {
        char *dir = tree("100\n", "3\n"), *p = NULL;
        HctxStats s;

        ASSERT_TRUE(asprintf(&p, "%s/block/nvme0n1/hctx1/run", dir) > 0);
        ASSERT_INT_EQ(unlink(p), 0);
        ASSERT_INT_EQ(mkfifo(p, 0600), 0);
        alarm(10); /* a hang fails the test instead of stalling the suite */
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        alarm(0);
        ASSERT_TRUE(!s.available);
        ASSERT_STREQ(s.why_not, "hctx1/run: not a regular file");
        hctx_stats_done(&s);

        /* The type file a FIFO, too. */
        free(p);
        ASSERT_TRUE(asprintf(&p, "%s/block/nvme0n1/hctx0/type", dir) > 0);
        ASSERT_INT_EQ(unlink(p), 0);
        ASSERT_INT_EQ(mkfifo(p, 0600), 0);
        alarm(10);
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        alarm(0);
        ASSERT_TRUE(!s.available);
        ASSERT_TRUE(strstr(s.why_not, "not a regular file"));
        hctx_stats_done(&s);
        free(p);
        tmpdir_remove(dir);
}

TEST(hctx_count_capped) {
        char *dir = tmpdir_new(), *p = NULL;
        HctxStats s;

        /* Refused before any of them is read: empty directories do. */
        for (unsigned i = 0; i <= HCTX_STATS_MAX; i++) {
                ASSERT_TRUE(asprintf(&p, "%s/block/nvme0n1/hctx%u", dir, i) > 0);
                ASSERT_INT_EQ(mkdir_p(p, 0755), 0);
                free(p);
        }
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_STREQ(s.why_not, "more than 4096 hctx directories in block/nvme0n1");
        ASSERT_INT_EQ(s.n, 0);
        hctx_stats_done(&s);

        /* 4096 are read (and the empty ones then fail on their missing type). */
        ASSERT_TRUE(asprintf(&p, "%s/block/nvme0n1/hctx%u", dir, HCTX_STATS_MAX) > 0);
        ASSERT_INT_EQ(rmdir(p), 0);
        free(p);
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &s), 0);
        ASSERT_TRUE(!s.available);
        ASSERT_TRUE(strstr(s.why_not, "/type: No such file or directory"));
        hctx_stats_done(&s);
        tmpdir_remove(dir);
}

/* Samples by hand: hctx0 default, hctx1 read, hctx2 and hctx3 poll. */
static HctxStats sample(bool queued, uint64_t d0, uint64_t r1, uint64_t p2, uint64_t p3) {
        HctxStats s = {.available = true, .n = 4};
        const char *types[4] = {"default", "read", "poll", "poll"};
        uint64_t v[4] = {d0, r1, p2, p3};

        s.items = calloc(4, sizeof(HctxStat));
        if (!s.items)
                abort();
        for (unsigned i = 0; i < 4; i++) {
                s.items[i].index = i;
                strcpy(s.items[i].type, types[i]);
                s.items[i].has_run = true;
                s.items[i].run = 1000 + v[i]; /* runs, when queued is the counter: not looked at */
                s.items[i].scheduled = 1;
                s.items[i].has_queued = queued;
                s.items[i].queued = queued ? v[i] : 0;
                if (!queued)
                        s.items[i].run = v[i];
        }
        return s;
}

TEST(poll_queues_unused) {
        HctxStats a = sample(false, 100, 50, 7, 9), b = sample(false, 300, 60, 7, 9);
        FindingList l = {};
        const Finding *f;

        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        f = &l.items[0];
        ASSERT_STREQ(f->kind, "poll-queues-unused");
        ASSERT_INT_EQ(f->severity, FINDING_NOTICE);
        ASSERT_STREQ(f->knob, "poll_queues");
        ASSERT_STREQ(f->summary, "2 poll queues (hctx2 +0, hctx3 +0) took 0 queue runs while the default/read queues "
                                 "took 210: polled I/O does not reach the poll queues: applications must use "
                                 "RWF_HIPRI / io_uring IORING_SETUP_IOPOLL (fio --hipri)");
        ASSERT_TRUE(value_of(f, "poll_queues") == 2);
        ASSERT_TRUE(value_of(f, "poll_run") == 0);
        ASSERT_TRUE(value_of(f, "other_run") == 210);
        ASSERT_TRUE(value_of(f, "hctx2_run") == 0);
        ASSERT_TRUE(value_of(f, "hctx3_run") == 0);
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);

        /* 99 on the other queues: too little to tell. */
        a = sample(false, 100, 0, 7, 9);
        b = sample(false, 199, 0, 7, 9);
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-queues-used");
        ASSERT_INT_EQ(l.items[0].severity, FINDING_INFO);
        ASSERT_TRUE(strstr(l.items[0].summary, "too little I/O to tell"));
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);
}

TEST(poll_queues_used) {
        /* queued (requests) is preferred when both samples have it everywhere. */
        HctxStats a = sample(true, 1000, 0, 10, 20), b = sample(true, 1500, 0, 60, 20);
        FindingList l = {};
        const Finding *f;

        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        f = &l.items[0];
        ASSERT_STREQ(f->kind, "poll-queues-used");
        ASSERT_INT_EQ(f->severity, FINDING_INFO);
        ASSERT_STREQ(f->summary, "2 poll queues (hctx2 +50, hctx3 +0) took 50 requests, the default/read queues 500");
        ASSERT_TRUE(value_of(f, "poll_queued") == 50);
        ASSERT_TRUE(value_of(f, "other_queued") == 500);
        ASSERT_TRUE(value_of(f, "hctx2_queued") == 50);
        ASSERT_TRUE(value_of(f, "hctx3_queued") == 0);
        finding_list_done(&l);

        /* No poll queues on the disk (io_poll false): nothing. */
        ASSERT_INT_EQ(pollq_findings("nvme0n1", false, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        /* Queue types without a poll queue: nothing either. */
        strcpy(b.items[2].type, "default");
        strcpy(b.items[3].type, "read");
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 0);
        hctx_stats_done(&a);
        hctx_stats_done(&b);
}

TEST(poll_runs_without_scheduler) {
        /* 6.1 with "none": requests are issued directly and "run" stays 0 (seen
         * in the VM), so idle poll queues say nothing... */
        HctxStats a = sample(false, 100, 0, 7, 9), b = sample(false, 300, 0, 7, 9);
        FindingList l = {};

        for (unsigned i = 0; i < 4; i++)
                a.items[i].scheduled = b.items[i].scheduled = 0;
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        ASSERT_INT_EQ(l.items[0].severity, FINDING_NOTICE);
        ASSERT_TRUE(strstr(l.items[0].summary, "without an I/O scheduler requests are issued directly"));
        finding_list_done(&l);

        /* ... one hctx unknown is as good as none ... */
        for (unsigned i = 0; i < 4; i++)
                a.items[i].scheduled = b.items[i].scheduled = 1;
        b.items[3].scheduled = -1;
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        finding_list_done(&l);

        /* ... but runs on a poll queue still prove polled I/O got there. */
        b.items[3].scheduled = 0;
        b.items[3].run = 20;
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-queues-used");
        ASSERT_STREQ(l.items[0].summary,
                     "2 poll queues (hctx2 +0, hctx3 +11) took 11 queue runs, the default/read queues 200");
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);

        /* "queued" counts requests whatever the scheduler. */
        a = sample(true, 100, 0, 7, 9);
        b = sample(true, 300, 0, 7, 9);
        for (unsigned i = 0; i < 4; i++)
                a.items[i].scheduled = b.items[i].scheduled = 0;
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_STREQ(l.items[0].kind, "poll-queues-unused");
        ASSERT_TRUE(strstr(l.items[0].summary, "took 0 requests while the default/read queues took 200"));
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);
}

TEST(poll_unknown) {
        HctxStats a = sample(false, 100, 0, 7, 9), b = sample(false, 300, 0, 7, 9);
        HctxStats gone = {.available = false, .why_not = (char *) "debugfs not mounted at /sys/kernel/debug"};
        FindingList l = {};

        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &gone, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        ASSERT_INT_EQ(l.items[0].severity, FINDING_NOTICE);
        ASSERT_STREQ(l.items[0].summary, "whether polled I/O reaches the poll queues is unknown: debugfs not mounted "
                                         "at /sys/kernel/debug");
        finding_list_done(&l);
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &gone, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        finding_list_done(&l);

        /* A counter reset in between (a write to it zeroes it). */
        b.items[0].run = 5;
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_TRUE(strstr(l.items[0].summary, "went backwards"));
        finding_list_done(&l);

        /* The queues changed (a reset that remapped them). */
        b.items[0].run = 300;
        strcpy(b.items[1].type, "poll");
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_TRUE(strstr(l.items[0].summary, "changed between the samples"));
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);
}

TEST(poll_from_two_reads_of_a_tree) {
        char *dir = tree("1000\n", "40\n");
        HctxStats a, b;
        FindingList l = {};

        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &a), 0);
        tmpdir_write(dir, "block/nvme0n1/hctx0/run", "1500\n");
        ASSERT_INT_EQ(hctx_stats_read(dir, "nvme0n1", &b), 0);
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-queues-unused");
        ASSERT_TRUE(value_of(&l.items[0], "other_run") == 500);
        ASSERT_TRUE(value_of(&l.items[0], "hctx1_run") == 0);
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);

        /* The 6.1 fixture ("none", every run 0): unknown, said so. */
        _cleanup_free_ char *root = fixture_debugfs();
        ASSERT_INT_EQ(hctx_stats_read(root, "nvme0n1", &a), 0);
        ASSERT_INT_EQ(hctx_stats_read(root, "nvme0n1", &b), 0);
        ASSERT_INT_EQ(pollq_findings("nvme0n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);

        /* 6.12 (types only): unknown, said so. */
        ASSERT_INT_EQ(hctx_stats_read(root, "nvme2n1", &a), 0);
        ASSERT_INT_EQ(hctx_stats_read(root, "nvme2n1", &b), 0);
        ASSERT_INT_EQ(pollq_findings("nvme2n1", true, &a, &b, &l), 0);
        ASSERT_INT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].kind, "poll-unknown");
        ASSERT_TRUE(strstr(l.items[0].summary, "no per-queue counters"));
        finding_list_done(&l);
        hctx_stats_done(&a);
        hctx_stats_done(&b);
        tmpdir_remove(dir);
}

TEST_MAIN(T(smart_decoded_from_spec_offsets), T(id_ctrl_thresholds), T(apst_table_worst_latencies),
          T(read_without_device_node_is_recorded), T(findings_of_a_healthy_drive), T(findings_of_a_hot_failing_drive),
          T(throttle_history_alone_is_a_notice), T(unreadable_smart), T(hctx_stats_of_6_1),
          T(hctx_stats_of_5_15_and_6_12), T(hctx_stats_missing), T(hctx_scheduler_seen), T(hctx_garbage_rejected),
          T(hctx_fifo_does_not_hang), T(hctx_count_capped), T(poll_queues_unused), T(poll_queues_used),
          T(poll_runs_without_scheduler), T(poll_unknown), T(poll_from_two_reads_of_a_tree))
