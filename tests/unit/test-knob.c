/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fileio.h"
#include "knob.h"
#include "macro.h"
#include "nvme-feature.h"
#include "util.h"
#include "tests.h"

static char *norm(KnobId id, const char *raw) {
        char *out = NULL;
        return knob_table[id].normalize(raw, &out) < 0 ? NULL : out;
}

static char *resolve(KnobId id, const char *v, const KnobFacts *f) {
        char *out = NULL, *note = NULL;
        int r = knob_table[id].resolve(v, f, &out, &note);
        free(note);
        return r < 0 ? NULL : out;
}

static int parse_rc(KnobId id, const char *v) {
        char *out = NULL;
        int r = knob_table[id].parse(v, &out);
        free(out);
        return r;
}

static char *parse(KnobId id, const char *v) {
        char *out = NULL;
        return knob_table[id].parse(v, &out) < 0 ? NULL : out;
}

#define CHECK(expr, want)                       \
        do {                                    \
                _cleanup_free_ char *_v = expr; \
                ASSERT_STREQ(_v, want);         \
        } while (0)

TEST(table_is_in_write_order) {
        /* A controller rebind (for new NVMe queue counts) resets every queue attribute,
         * so those rows come first; switching the scheduler resets nr_requests, so the
         * scheduler comes first among the queue rows. */
        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (knob_table[i].scope == KNOB_SCOPE_MODULE)
                        ASSERT_TRUE(i < KNOB_SCHEDULER);
        for (size_t i = 0; i < KNOB_SCHEDULER; i++)
                ASSERT_INT_EQ(knob_table[i].scope, KNOB_SCOPE_MODULE);
        ASSERT_TRUE(KNOB_SCHEDULER < KNOB_NR_REQUESTS);
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                ASSERT_INT_EQ(knob_table[i].id, i);
                ASSERT_TRUE(knob_by_name(knob_table[i].name) == &knob_table[i]);
        }
        ASSERT_TRUE(knob_by_name("nope") == NULL);
}

TEST(scheduler_readback) {
        CHECK(norm(KNOB_SCHEDULER, "[none] mq-deadline kyber bfq"), "none");
        CHECK(norm(KNOB_SCHEDULER, "none [mq-deadline] kyber bfq\n"), "mq-deadline");
        /* bio-based disks print one bare name */
        CHECK(norm(KNOB_SCHEDULER, "none"), "none");
        ASSERT_TRUE(norm(KNOB_SCHEDULER, "none mq-deadline") == NULL);
        ASSERT_TRUE(norm(KNOB_SCHEDULER, "[none mq-deadline") == NULL);
}

TEST(scheduler_names) {
        CHECK(parse(KNOB_SCHEDULER, "mq-deadline"), "mq-deadline");
        CHECK(parse(KNOB_SCHEDULER, "bfq"), "bfq");
        ASSERT_INT_EQ(parse_rc(KNOB_SCHEDULER, "MQ-Deadline"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_SCHEDULER, "mq deadline"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_SCHEDULER, ""), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_SCHEDULER, "averyveryverylongname"), -EINVAL);
}

TEST(nr_requests_resolution) {
        KnobFacts none = { .nr_tags = 1023, .scheduler_after = "none" };
        KnobFacts dl = { .nr_tags = 32, .scheduler_after = "mq-deadline" };
        KnobFacts unknown = { .nr_tags = 0, .scheduler_after = "none" };

        CHECK(resolve(KNOB_NR_REQUESTS, "max", &none), "1023");
        CHECK(resolve(KNOB_NR_REQUESTS, "256", &none), "256");
        /* without a scheduler the tag set cannot grow: clamp to it */
        CHECK(resolve(KNOB_NR_REQUESTS, "4096", &none), "1023");
        /* with a scheduler the limit is MAX_SCHED_RQ, not the hardware depth */
        CHECK(resolve(KNOB_NR_REQUESTS, "1024", &dl), "1024");
        CHECK(resolve(KNOB_NR_REQUESTS, "4096", &dl), "2048");
        CHECK(resolve(KNOB_NR_REQUESTS, "max", &dl), "32");
        /* BLKDEV_MIN_RQ */
        CHECK(resolve(KNOB_NR_REQUESTS, "1", &dl), "4");
        ASSERT_TRUE(resolve(KNOB_NR_REQUESTS, "max", &unknown) == NULL);
        ASSERT_INT_EQ(parse_rc(KNOB_NR_REQUESTS, "0"), -ERANGE);
        ASSERT_INT_EQ(parse_rc(KNOB_NR_REQUESTS, "10241"), -ERANGE);
        ASSERT_INT_EQ(parse_rc(KNOB_NR_REQUESTS, "deep"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_NR_REQUESTS, "-5"), -ERANGE);
}

TEST(wbt_default_depends_on_rotational) {
        KnobFacts rot = { .rotational = true }, ssd = { .rotational = false };
        CHECK(parse(KNOB_WBT_LAT_USEC, "default"), "-1");
        CHECK(parse(KNOB_WBT_LAT_USEC, "off"), "0");
        CHECK(resolve(KNOB_WBT_LAT_USEC, "-1", &rot), "75000");
        CHECK(resolve(KNOB_WBT_LAT_USEC, "-1", &ssd), "2000");
        CHECK(resolve(KNOB_WBT_LAT_USEC, "0", &ssd), "0");
        CHECK(resolve(KNOB_WBT_LAT_USEC, "500", &ssd), "500");
        ASSERT_INT_EQ(parse_rc(KNOB_WBT_LAT_USEC, "-2"), -ERANGE);
}

TEST(read_ahead_rounds_to_pages) {
        KnobFacts f = {};
        CHECK(resolve(KNOB_READ_AHEAD_KB, "128", &f), "128");
        CHECK(resolve(KNOB_READ_AHEAD_KB, "130", &f), "128");
        CHECK(resolve(KNOB_READ_AHEAD_KB, "3", &f), "0");
        ASSERT_INT_EQ(parse_rc(KNOB_READ_AHEAD_KB, "2000000"), -ERANGE);
}

TEST(max_sectors_clamps_to_hardware) {
        KnobFacts f = { .max_hw_sectors_kb = 512 };
        CHECK(resolve(KNOB_MAX_SECTORS_KB, "max", &f), "512");
        CHECK(resolve(KNOB_MAX_SECTORS_KB, "1024", &f), "512");
        CHECK(resolve(KNOB_MAX_SECTORS_KB, "256", &f), "256");
        ASSERT_INT_EQ(parse_rc(KNOB_MAX_SECTORS_KB, "2"), -ERANGE);
}

TEST(small_enums_and_booleans) {
        CHECK(parse(KNOB_RQ_AFFINITY, "2"), "2");
        ASSERT_INT_EQ(parse_rc(KNOB_RQ_AFFINITY, "3"), -ERANGE);
        CHECK(parse(KNOB_NOMERGES, "0"), "0");
        ASSERT_INT_EQ(parse_rc(KNOB_NOMERGES, "x"), -EINVAL);
        CHECK(parse(KNOB_ADD_RANDOM, "false"), "0");
        CHECK(parse(KNOB_IOSTATS, "yes"), "1");
        ASSERT_INT_EQ(parse_rc(KNOB_IOSTATS, "maybe"), -EINVAL);
        CHECK(norm(KNOB_RQ_AFFINITY, "1\n"), "1");
}

/* ASPM: "off" or the enabled states in table order; an L1 substate needs l1 (the
 * kernel enables L1 with it), unknown and repeated names are refused. */
TEST(aspm_states) {
        unsigned m;

        CHECK(parse(KNOB_PCIE_ASPM, "off"), "off");
        CHECK(parse(KNOB_PCIE_ASPM, "l1"), "l1");
        CHECK(parse(KNOB_PCIE_ASPM, "l1_2,l1,l0s"), "l0s,l1,l1_2");
        CHECK(parse(KNOB_PCIE_ASPM, "l1, l1_1_pcipm"), "l1,l1_1_pcipm");
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, "l1_2"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, "l1,l1"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, "L1"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, "l2"), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, ","), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, ""), -EINVAL);
        ASSERT_INT_EQ(parse_rc(KNOB_PCIE_ASPM, "off,l1"), -EINVAL);
        CHECK(norm(KNOB_PCIE_ASPM, "l1,l1_1\n"), "l1,l1_1");
        ASSERT_INT_EQ(aspm_states_from_string("l0s,l1_2_pcipm,l1", &m), 0);
        ASSERT_INT_EQ(m, 0x23);
        ASSERT_STREQ(aspm_link_files[5], "l1_2_pcipm"); /* not "l1_2_pcipm_aspm" (drivers/pci/pcie/aspm.c) */
        ASSERT_STREQ(aspm_link_files[1], "l1_aspm");
        ASSERT_INT_EQ(knob_get(KNOB_PCIE_ASPM)->scope, KNOB_SCOPE_LINK);
}

/* The behaviour each row carries for reconcile and the daemon. */
TEST(row_behaviour) {
        static const KnobId every_mq[] = { KNOB_SCHEDULER, KNOB_NR_REQUESTS, KNOB_RQ_AFFINITY, KNOB_NOMERGES,
                                           KNOB_READ_AHEAD_KB };
        unsigned want = 0, have = 0;
        char *why;

        for (size_t i = 0; i < ELEMENTSOF(every_mq); i++)
                want |= KNOB_MASK(every_mq[i]);
        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (knob_table[i].on_every_mq_queue)
                        have |= KNOB_MASK(i);
        ASSERT_INT_EQ(have, want);

        /* The scheduler resets nr_requests, and later rows resolve against it. */
        ASSERT_TRUE(knob_resolve_basis() == &knob_table[KNOB_SCHEDULER]);
        ASSERT_INT_EQ(knob_table[KNOB_SCHEDULER].resets, KNOB_MASK(KNOB_NR_REQUESTS));
        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (i != KNOB_SCHEDULER)
                        ASSERT_INT_EQ(knob_table[i].resets, 0);
        /* It is written before what it resets. */
        ASSERT_TRUE(KNOB_SCHEDULER < KNOB_NR_REQUESTS);

        why = knob_table[KNOB_SCHEDULER].refusal("foo", -EINVAL);
        ASSERT_STREQ(why, "kernel has no scheduler 'foo' (not built in, no foo-iosched module)");
        free(why);
        ASSERT_TRUE(knob_table[KNOB_SCHEDULER].refusal("foo", -EIO) == NULL);

        ASSERT_INT_EQ(knob_table[KNOB_WBT_LAT_USEC].unsupported_errno, EINVAL);
        ASSERT_STREQ(knob_table[KNOB_NR_REQUESTS].limit_name, "hardware tag depth");

        /* Module rows read their value in the controller's queue maps and tag depth. */
        NvmeQueueMap m = { .n_default = 4, .n_read = 2, .n_poll = 1, .known = true, .nr_tags = 2047 };
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                ASSERT_TRUE((knob_table[i].scope == KNOB_SCOPE_MODULE) == (knob_table[i].from_queue_map != NULL &&
                                                                           knob_table[i].unit != NULL));
                ASSERT_TRUE(!knob_table[i].sets_tag_depth || knob_table[i].scope == KNOB_SCOPE_MODULE);
        }
        ASSERT_INT_EQ(knob_table[KNOB_NVME_POLL_QUEUES].from_queue_map(&m), 1);
        ASSERT_INT_EQ(knob_table[KNOB_NVME_WRITE_QUEUES].from_queue_map(&m), 4);
        ASSERT_INT_EQ(knob_table[KNOB_NVME_IO_QUEUE_DEPTH].from_queue_map(&m), 2048); /* nr_tags + 1 */
        m.nr_tags = 0;
        ASSERT_INT_EQ(knob_table[KNOB_NVME_IO_QUEUE_DEPTH].from_queue_map(&m), 0); /* unknown */
        ASSERT_STREQ(knob_table[KNOB_NVME_POLL_QUEUES].unit, "poll queue(s)");
        ASSERT_STREQ(knob_table[KNOB_NVME_WRITE_QUEUES].unit, "write queue(s)");
        ASSERT_STREQ(knob_table[KNOB_NVME_IO_QUEUE_DEPTH].unit, "entries per I/O queue");
        ASSERT_TRUE(knob_table[KNOB_NVME_IO_QUEUE_DEPTH].sets_tag_depth);
        ASSERT_TRUE(!knob_table[KNOB_NVME_POLL_QUEUES].sets_tag_depth && !knob_table[KNOB_NVME_WRITE_QUEUES].sets_tag_depth);
}

/* nvme.io_queue_depth: the driver's bounds (io_queue_depth_set: 2..4095, EINVAL
 * otherwise), and the controller's CAP.MQES + 1 caps what it takes (nvme_pci_enable). */
TEST(io_queue_depth_bounds_and_mqes) {
        const Knob *k = knob_get(KNOB_NVME_IO_QUEUE_DEPTH);
        char *v = NULL, *note = NULL;
        KnobFacts f = {};

        ASSERT_STREQ(k->section, "nvme");
        ASSERT_STREQ(k->attr, "io_queue_depth");
        ASSERT_TRUE(knob_by_name("io_queue_depth") == k);
        ASSERT_INT_EQ(k->parse("1", &v), -ERANGE);
        ASSERT_INT_EQ(k->parse("4096", &v), -ERANGE);
        ASSERT_INT_EQ(k->parse("deep", &v), -EINVAL);
        ASSERT_INT_EQ(k->parse("2", &v), 0);
        ASSERT_STREQ(v, "2");
        free(v);
        ASSERT_INT_EQ(k->parse("4095", &v), 0);
        ASSERT_STREQ(v, "4095");
        free(v);
        /* MQES unknown: as asked, no note. */
        ASSERT_INT_EQ(k->resolve("4095", &f, &v, &note), 0);
        ASSERT_STREQ(v, "4095");
        ASSERT_TRUE(note == NULL);
        free(v);
        /* QEMU's controller: MQES 0x7ff, 2048 entries, tag depth 2047. */
        f.max_queue_entries = 2048;
        ASSERT_INT_EQ(k->resolve("4095", &f, &v, &note), 0);
        ASSERT_STREQ(v, "2048");
        ASSERT_STREQ(note, "capped at the controller's 2048 entries per queue (CAP.MQES + 1): tag depth 2047");
        free(v);
        free(note);
        note = NULL;
        ASSERT_INT_EQ(k->resolve("1024", &f, &v, &note), 0);
        ASSERT_STREQ(v, "1024");
        ASSERT_TRUE(note == NULL);
        free(v);
        /* The possible CPUs bound queue counts, not the depth. */
        f = (KnobFacts) { .possible_cpus = 2 };
        ASSERT_INT_EQ(k->resolve("2048", &f, &v, NULL), 0);
        ASSERT_STREQ(v, "2048");
        free(v);
}

/* nr_requests under none follows the tag depth; a larger one pending in
 * nvme.io_queue_depth is said, not planned (writing it now would be EINVAL). */
TEST(nr_requests_notes_pending_tag_depth) {
        const Knob *k = knob_get(KNOB_NR_REQUESTS);
        KnobFacts f = { .nr_tags = 1023, .scheduler_after = "none", .nr_tags_pending = 2047 };
        char *v = NULL, *note = NULL;

        ASSERT_INT_EQ(k->resolve("4096", &f, &v, &note), 0);
        ASSERT_STREQ(v, "1023");
        ASSERT_STREQ(note, "clamped to 1023 (hardware tag depth; 2047 once the pending nvme.io_queue_depth takes effect)");
        free(v);
        free(note);
        note = NULL;
        ASSERT_INT_EQ(k->resolve("1500", &f, &v, &note), 0);
        ASSERT_STREQ(v, "1023");
        ASSERT_STREQ(note, "clamped to 1023 (hardware tag depth; 1500 once the pending nvme.io_queue_depth takes effect)");
        free(v);
        free(note);
        note = NULL;
        /* "max" is the tag depth there is now. */
        ASSERT_INT_EQ(k->resolve("max", &f, &v, &note), 0);
        ASSERT_STREQ(v, "1023");
        ASSERT_TRUE(note == NULL);
        free(v);
        /* With a scheduler the tag depth is not the limit: no such note. */
        f.scheduler_after = "mq-deadline";
        ASSERT_INT_EQ(k->resolve("4096", &f, &v, &note), 0);
        ASSERT_STREQ(v, "2048");
        ASSERT_STREQ(note, "clamped to 2048 (scheduler queue limit)");
        free(v);
        free(note);
        /* After the rebind, the new tag depth: max is 2047. */
        f = (KnobFacts) { .nr_tags = 2047, .scheduler_after = "none" };
        ASSERT_INT_EQ(k->resolve("max", &f, &v, NULL), 0);
        ASSERT_STREQ(v, "2047");
        free(v);
}

/* A file of the source tree (the fixtures are its tests/fixtures), or NULL. */
static char *source_file(const char *rel) {
        const char *fixtures = getenv("IOTUNED_TEST_FIXTURES");
        _cleanup_free_ char *p = NULL;
        char *text = NULL;

        if (!fixtures) {
                fprintf(stderr, "# IOTUNED_TEST_FIXTURES is not set: run through meson test\n");
                return NULL;
        }
        if (asprintf_safe(&p, "%s/../../%s", fixtures, rel) < 0 || read_full_file(p, 1024 * 1024, &text) < 0) {
                fprintf(stderr, "# cannot read %s\n", p ?: rel);
                return NULL;
        }
        return text;
}

/* The part of text from the first occurrence of start up to the first end after it. */
static char *between(const char *text, const char *start, const char *end) {
        const char *a = strstr(text, start), *b;
        if (!a)
                return NULL;
        b = strstr(a + strlen(start), end);
        return strndup(a, b ? (size_t) (b - a) : strlen(a));
}

/* Whether a line of text is exactly line, or starts with it when prefix. */
static bool has_line(const char *text, const char *line, bool prefix) {
        size_t n = strlen(line);
        for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strneq(p, line, n) && (prefix || p[n] == '\n' || p[n] == 0))
                        return true;
        return false;
}

/* Every knob in the table is documented where users and tests look for it: its own
 * entry in iotuned.profile(5) ("## name" under KNOBS, or a "*name:*" term in the
 * nvme: section), the README's list of queue knobs, and, for the sysfs attributes
 * below the disk, the umockdev testbed's defaults (tests/integration/testbed.py,
 * queue_attrs()). Controller, module and IRQ rows have no attribute below the
 * disk: the testbed answers them with its fake controller and --root /proc. */
TEST(every_knob_is_documented_and_faked) {
        _cleanup_free_ char *man = source_file("man/iotuned.profile.5.scd");
        _cleanup_free_ char *readme = source_file("README.md");
        _cleanup_free_ char *testbed = source_file("tests/integration/testbed.py");
        _cleanup_free_ char *readme_list = NULL, *defaults = NULL;
        bool ok = true;

        ASSERT_TRUE(man && readme && testbed);
        readme_list = between(readme, "\nQueue knobs: ", "\n\n");
        defaults = between(testbed, "\ndef queue_attrs(", "\ndef ");
        ASSERT_TRUE(readme_list && defaults);

        for (size_t i = 0; i < _KNOB_MAX; i++) {
                const Knob *k = &knob_table[i];
                _cleanup_free_ char *heading = NULL, *term = NULL, *term2 = NULL, *quoted = NULL, *code = NULL;

                ASSERT_TRUE(asprintf_safe(&heading, "## %s", k->name) >= 0 &&
                            asprintf_safe(&term, "*%s:*", k->name) >= 0 &&
                            asprintf_safe(&term2, ", *%s:*", k->name) >= 0 &&
                            asprintf_safe(&quoted, "\"%s\"", k->attr ?: "") >= 0 &&
                            asprintf_safe(&code, "`%s`", k->name) >= 0);
                if (!has_line(man, heading, false) && !has_line(man, term, true) && !strstr(man, term2)) {
                        fprintf(stderr, "# %s: no entry in man/iotuned.profile.5.scd (\"%s\" or \"%s\")\n", k->name,
                                heading, term);
                        ok = false;
                }
                if (k->scope != KNOB_SCOPE_QUEUE)
                        continue;
                if (!strstr(readme_list, code)) {
                        fprintf(stderr, "# %s: missing from README.md's \"Queue knobs:\" list\n", k->name);
                        ok = false;
                }
                if (!strstr(defaults, quoted)) {
                        fprintf(stderr, "# %s: no %s in tests/integration/testbed.py queue_attrs()\n", k->name, quoted);
                        ok = false;
                }
        }
        ASSERT_TRUE(ok);
}

TEST_MAIN(T(table_is_in_write_order), T(scheduler_readback), T(scheduler_names), T(nr_requests_resolution),
          T(wbt_default_depends_on_rotational), T(read_ahead_rounds_to_pages), T(max_sectors_clamps_to_hardware),
          T(small_enums_and_booleans), T(aspm_states), T(row_behaviour), T(io_queue_depth_bounds_and_mqes),
          T(nr_requests_notes_pending_tag_depth), T(every_knob_is_documented_and_faked))
