/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What `iotunectl tune` measures and decides with: the latency histogram, the
 * paired statistic, /sys/block/X/stat, and the hold the daemon honours. */
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "blockstat.h"
#include "histogram.h"
#include "hold.h"
#include "stats.h"
#include "tests.h"
#include "tmpdir.h"

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

TEST(buckets_tile_the_range_and_hold_their_values) {
        uint64_t prev_high = 0;
        for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                uint64_t low, high;
                hist_bucket_bounds(b, &low, &high);
                ASSERT_INT_EQ(low, prev_high); /* no gap, no overlap */
                ASSERT_TRUE(high > low);
                /* every bucket narrower than 1/32 of its values (exact ones: width 1) */
                ASSERT_TRUE(low < HIST_LINEAR || (high - low) * HIST_SUB <= low);
                ASSERT_INT_EQ(hist_bucket_of(low), b);
                ASSERT_INT_EQ(hist_bucket_of(high - 1), b);
                prev_high = high;
        }
        ASSERT_INT_EQ(hist_bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
}

TEST(percentiles_within_the_bucket_width_of_the_exact_ones) {
        static Histogram h;
        static uint64_t v[20000];
        uint64_t state = 12345;

        hist_init(&h);
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                state = state * 6364136223846793005ULL + 1442695040888963407ULL;
                /* log-uniform from 1 us to 10 ms, a latency-like spread */
                v[i] = (uint64_t) (1000.0 * pow(10, (double) (state >> 11) / (double) (1ULL << 53) * 4));
                hist_record(&h, v[i]);
        }
        qsort(v, ELEMENTSOF(v), sizeof(uint64_t), cmp_u64);
        const double ps[] = {1, 50, 90, 99, 99.9, 100};
        for (size_t i = 0; i < ELEMENTSOF(ps); i++) {
                size_t rank = (size_t) ceil(ps[i] / 100.0 * ELEMENTSOF(v));
                double exact = (double) v[rank - 1], got = (double) hist_percentile(&h, ps[i]);
                if (fabs(got - exact) / exact > 1.0 / HIST_SUB) {
                        fprintf(stderr, "# p%g: exact %.0f, histogram %.0f\n", ps[i], exact, got);
                        ASSERT_TRUE(false);
                }
        }
        ASSERT_INT_EQ(h.count, ELEMENTSOF(v));
        ASSERT_INT_EQ(h.min_nsec, v[0]);
        ASSERT_INT_EQ(h.max_nsec, v[ELEMENTSOF(v) - 1]);
}

TEST(merge_adds_counts_and_extremes) {
        static Histogram a, b;
        hist_init(&a);
        hist_init(&b);
        ASSERT_INT_EQ(hist_percentile(&a, 50), 0);
        hist_record(&a, 10);
        hist_record(&b, 5000);
        hist_record(&b, 7);
        hist_merge(&a, &b);
        ASSERT_INT_EQ(a.count, 3);
        ASSERT_INT_EQ(a.min_nsec, 7);
        ASSERT_INT_EQ(a.max_nsec, 5000);
        ASSERT_INT_EQ(hist_percentile(&a, 50), 10);
        ASSERT_INT_EQ(hist_percentile(&a, 1), 7);
}

TEST(a_candidate_wins_when_the_rounds_favour_it_beyond_chance) {
        const double base[] = {100, 102, 98, 101, 99, 100, 103};
        const double faster[] = {150, 149, 148, 155, 151, 149, 152};
        const double one_loss[] = {150, 149, 97, 155, 151, 149, 152};
        PairedEffect e;

        ASSERT_INT_EQ(paired_effect(faster, base, 7, true, &e), 0);
        ASSERT_INT_EQ(effect_verdict(&e, 0.05, 0.01), EFFECT_BETTER);
        ASSERT_INT_EQ(e.favour, 7);
        ASSERT_TRUE(e.median > 0.45 && e.median < 0.55);
        ASSERT_TRUE(e.low > 0.4 && e.low <= e.median && e.high >= e.median);
        /* one round against it: 6 of 7 is p = 0.0625, a tie at 0.01 whatever the
         * median, a win at 0.07 */
        ASSERT_INT_EQ(paired_effect(one_loss, base, 7, true, &e), 0);
        ASSERT_INT_EQ(e.favour, 6);
        ASSERT_INT_EQ(effect_verdict(&e, 0.05, 0.01), EFFECT_TIE);
        ASSERT_INT_EQ(effect_verdict(&e, 0.05, 0.07), EFFECT_BETTER);
        /* latency: lower is better; the same numbers are a loss */
        ASSERT_INT_EQ(paired_effect(faster, base, 7, false, &e), 0);
        ASSERT_INT_EQ(effect_verdict(&e, 0.05, 0.01), EFFECT_WORSE);
        /* every round better, but by less than the minimum effect: a tie */
        const double slightly[] = {101, 103, 99, 102, 100, 101, 104};
        ASSERT_INT_EQ(paired_effect(slightly, base, 7, true, &e), 0);
        ASSERT_INT_EQ(e.favour, 7);
        ASSERT_INT_EQ(effect_verdict(&e, 0.05, 0.01), EFFECT_TIE);
        ASSERT_INT_EQ(effect_verdict(&e, 0.005, 0.01), EFFECT_BETTER);
}

TEST(sign_test_p_values_are_the_binomial_tail) {
        ASSERT_TRUE(fabs(sign_test_p(7, 7) - 1.0 / 128) < 1e-12);
        ASSERT_TRUE(fabs(sign_test_p(6, 7) - 8.0 / 128) < 1e-12);
        ASSERT_TRUE(fabs(sign_test_p(5, 5) - 1.0 / 32) < 1e-12);
        ASSERT_TRUE(fabs(sign_test_p(10, 11) - 12.0 / 2048) < 1e-12);
        ASSERT_TRUE(fabs(sign_test_p(0, 9) - 1.0) < 1e-12);
        ASSERT_TRUE(fabs(sign_test_p(32, 32) - ldexp(1.0, -32)) < 1e-20);
}

TEST(the_statistic_is_reproducible_and_refuses_bad_samples) {
        const double base[] = {100, 90, 110, 95, 105}, cand[] = {120, 85, 130, 99, 104};
        const double zero[] = {100, 0, 110, 95, 105}, nan_[] = {100, NAN, 110, 95, 105};
        PairedEffect a, b;

        ASSERT_INT_EQ(paired_effect(cand, base, 5, true, &a), 0);
        ASSERT_INT_EQ(paired_effect(cand, base, 5, true, &b), 0);
        ASSERT_TRUE(a.low == b.low && a.high == b.high && a.median == b.median);
        ASSERT_INT_EQ(effect_verdict(&a, 0.05, 0.01), EFFECT_TIE);
        ASSERT_INT_EQ(paired_effect(cand, zero, 5, true, &a), -EINVAL);
        ASSERT_INT_EQ(paired_effect(nan_, base, 5, true, &a), -EINVAL);
        ASSERT_INT_EQ(paired_effect(cand, base, 0, true, &a), -EINVAL);
        ASSERT_INT_EQ(paired_effect(cand, base, STATS_MAX_ROUNDS + 1, true, &a), -EINVAL);
}

TEST(block_stat_in_every_layout_and_the_load_of_two_samples) {
        BlockStat a, b;
        BlockLoad l;

        /* 17 fields (5.5+): discards and flushes after the 11 classic ones */
        ASSERT_INT_EQ(blockstat_parse("  100 0 800 50 10 0 80 20 2 500 1000 0 0 0 0 0 0\n", &a), 0);
        ASSERT_INT_EQ(a.ios[0], 100);
        ASSERT_INT_EQ(a.ios[1], 10);
        ASSERT_INT_EQ(a.in_flight, 2);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10 11", &b), 0);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", &b), 0);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10", &b), -EBADMSG);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10 x", &b), -EBADMSG);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10 -11", &b), -EBADMSG);
        ASSERT_INT_EQ(blockstat_parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", &b), -EBADMSG);
        ASSERT_INT_EQ(blockstat_parse("", &b), -EBADMSG);

        /* one second later: 1000 reads taking 2000 ms in all, busy 500 ms */
        ASSERT_INT_EQ(blockstat_parse("1100 0 8800 2050 10 0 80 20 2 1000 3000", &b), 0);
        a.sampled_usec = 1000000;
        b.sampled_usec = 2000000;
        ASSERT_INT_EQ(blockstat_load(&a, &b, &l), 0);
        ASSERT_TRUE(fabs(l.iops - 1000) < 1e-9);
        ASSERT_TRUE(fabs(l.utilisation - 0.5) < 1e-9);
        ASSERT_TRUE(fabs(l.await_ms - 2.0) < 1e-9);
        ASSERT_TRUE(fabs(l.queue_depth - 2.0) < 1e-9);
        /* a counter going backwards (a new disk of that name): no load */
        ASSERT_INT_EQ(blockstat_load(&b, &a, &l), -EINVAL);
}

TEST(diskstats_every_disk_in_one_read_and_hostile_lines_skipped) {
        char text[] =
                /* 6.1: 17 fields after the name; a partition and a 4.18 (15) line */
                " 259       0 nvme0n1 100 0 800 50 10 0 80 20 2 500 1000 0 0 0 0 0 0\n"
                " 259       1 nvme0n1p1 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
                "  43       0 nullb0 7 0 56 3 0 0 0 0 0 3 3 0 0 0 0\n"
                /* a repeated name: the first line counts */
                " 259       9 nvme0n1 999 0 0 0 0 0 0 0 0 0 0\n"
                /* skipped: too few fields, a word where a number goes, no name,
                 * a minor with a sign, a name of DISK_NAME_LEN (32) characters */
                "   8       0 sda 1 2 3\n"
                "   8      16 sdb 1 2 3 4 5 6 7 8 9 x 11\n"
                "   8      32\n"
                "   8     -48 sdd 1 2 3 4 5 6 7 8 9 10 11\n"
                "   8      64 abcdefghijklmnopqrstuvwxyz012345 1 2 3 4 5 6 7 8 9 10 11\n"
                "\n"
                "   8      80 sdf 1 2 3 4 5 6 7 8 9 10 11";
        DiskStats s = {};
        const BlockStat *b;

        ASSERT_INT_EQ(diskstats_parse(text, 42, &s), 0);
        ASSERT_INT_EQ(s.n, 4);
        b = diskstats_find(&s, "nvme0n1");
        ASSERT_TRUE(b);
        ASSERT_INT_EQ(b->ios[0], 100);
        ASSERT_INT_EQ(b->in_flight, 2);
        ASSERT_INT_EQ(b->sampled_usec, 42);
        b = diskstats_find(&s, "nullb0");
        ASSERT_TRUE(b);
        ASSERT_INT_EQ(b->ios[0], 7);
        ASSERT_TRUE(diskstats_find(&s, "nvme0n1p1"));
        ASSERT_TRUE(diskstats_find(&s, "sdf"));
        ASSERT_TRUE(!diskstats_find(&s, "sda"));
        ASSERT_TRUE(!diskstats_find(&s, "sdb"));
        ASSERT_TRUE(!diskstats_find(&s, "sdd"));
        ASSERT_TRUE(!diskstats_find(&s, "nvme0"));
        diskstats_done(&s);

        char empty[] = "";
        ASSERT_INT_EQ(diskstats_parse(empty, 1, &s), 0);
        ASSERT_INT_EQ(s.n, 0);
        ASSERT_TRUE(!diskstats_find(&s, "sda"));
        diskstats_done(&s);

        /* a line longer than DISKSTATS_LINE_MAX is not read at all */
        _cleanup_free_ char *longline = NULL;
        ASSERT_TRUE(asprintf(&longline, "8 0 sda 1 2 3 4 5 6 7 8 9 10 11%*s\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11",
                             (int) DISKSTATS_LINE_MAX, "") > 0);
        ASSERT_INT_EQ(diskstats_parse(longline, 1, &s), 0);
        ASSERT_INT_EQ(s.n, 1);
        ASSERT_TRUE(diskstats_find(&s, "sdb"));
        diskstats_done(&s);

        /* one entry per disk at most DISKSTATS_ENTRIES_MAX */
        size_t n = DISKSTATS_ENTRIES_MAX + 1, len = 0;
        _cleanup_free_ char *many = malloc(n * 40);
        ASSERT_TRUE(many);
        for (size_t i = 0; i < n; i++)
                len += (size_t) sprintf(many + len, "8 %zu d%zu 0 0 0 0 0 0 0 0 0 0 0\n", i, i);
        ASSERT_INT_EQ(diskstats_parse(many, 1, &s), -E2BIG);
}

static void put(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = path_join(dir, name);
        FILE *f = fopen(p, "we");
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

TEST(inflight_is_two_counts_and_nothing_else) {
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *fifo = path_join(dir, "inflight");
        unsigned n = 0;

        put(dir, "inflight", "       3        1\n");
        ASSERT_INT_EQ(blockstat_read_inflight(dir, &n), 0);
        ASSERT_INT_EQ(n, 4);
        put(dir, "inflight", "3\n");
        ASSERT_INT_EQ(blockstat_read_inflight(dir, &n), -EBADMSG);
        put(dir, "inflight", "3 1 7\n");
        ASSERT_INT_EQ(blockstat_read_inflight(dir, &n), -EBADMSG);
        put(dir, "inflight", "99999999999 1\n");
        ASSERT_INT_EQ(blockstat_read_inflight(dir, &n), -EBADMSG);
        /* a FIFO is refused, not waited on */
        ASSERT_INT_EQ(unlink(fifo), 0);
        ASSERT_INT_EQ(mkfifo(fifo, 0600), 0);
        ASSERT_TRUE(blockstat_read_inflight(dir, &n) < 0);
        ASSERT_INT_EQ(n, 4);
}

TEST(a_hold_is_honoured_until_its_deadline_or_its_holder_ends) {
        _cleanup_free_ char *dir = tmpdir_new();
        const uint64_t now = 1800000000ULL * 1000000ULL;
        Hold h = {};

        _cleanup_free_ char *none = path_join(dir, "absent");
        ASSERT_TRUE(!hold_any(none)); /* no directory */
        ASSERT_TRUE(!hold_any(dir));  /* empty */
        ASSERT_INT_EQ(hold_check(dir, "nvme0n1", now, &h), 0); /* no file */
        ASSERT_INT_EQ(hold_acquire(dir, "nvme0n1", getpid(), now + 60000000ULL), 0);
        ASSERT_TRUE(hold_any(dir));
        ASSERT_INT_EQ(hold_check(dir, "nvme0n1", now, &h), 1);
        ASSERT_INT_EQ(h.pid, getpid());
        ASSERT_INT_EQ(hold_check(dir, "nvme0n1", now + 60000000ULL, &h), 0); /* expired */
        /* renewed */
        ASSERT_INT_EQ(hold_acquire(dir, "nvme0n1", getpid(), now + 120000000ULL), 0);
        ASSERT_INT_EQ(hold_check(dir, "nvme0n1", now + 60000000ULL, &h), 1);
        ASSERT_INT_EQ(hold_release(dir, "nvme0n1"), 0);
        ASSERT_INT_EQ(hold_check(dir, "nvme0n1", now, &h), 0);
        ASSERT_TRUE(!hold_any(dir));
        ASSERT_INT_EQ(hold_release(dir, "nvme0n1"), 0); /* twice: fine */

        /* a holder that is gone holds nothing */
        pid_t child = fork();
        if (child == 0)
                _exit(0);
        ASSERT_TRUE(child > 0);
        ASSERT_INT_EQ(waitpid(child, NULL, 0), child);
        ASSERT_INT_EQ(hold_acquire(dir, "sda", child, now + 60000000ULL), 0);
        ASSERT_INT_EQ(hold_check(dir, "sda", now, &h), 0);

        /* names that are no kernel names are refused, never joined into a path */
        ASSERT_INT_EQ(hold_acquire(dir, "../x", getpid(), now), -EINVAL);
        ASSERT_INT_EQ(hold_check(dir, "..", now, &h), -EINVAL);
}

TEST(a_hold_file_that_cannot_be_trusted_is_not_honoured) {
        _cleanup_free_ char *dir = tmpdir_new();
        _cleanup_free_ char *fifo = path_join(dir, "vdb");
        const uint64_t now = 1800000000ULL * 1000000ULL;
        char text[128];
        Hold h;

        /* a deadline beyond HOLD_MAX_USEC would switch the daemon off for the disk */
        ASSERT_INT_EQ(hold_acquire(dir, "sda", getpid(), now + HOLD_MAX_USEC + 1), 0);
        ASSERT_INT_EQ(hold_check(dir, "sda", now, &h), -ERANGE);
        tmpdir_write(dir, "sdb", "pid=1\nuntil_usec=12\nmore=1\n");
        ASSERT_INT_EQ(hold_check(dir, "sdb", now, &h), -EBADMSG);
        tmpdir_write(dir, "sdc", "pid=1\n");
        ASSERT_INT_EQ(hold_check(dir, "sdc", now, &h), -EBADMSG);
        tmpdir_write(dir, "sdd", "pid=0\nuntil_usec=12\n");
        ASSERT_INT_EQ(hold_check(dir, "sdd", now, &h), -EBADMSG);
        (void) snprintf(text, sizeof(text), "pid=1\npid=1\nuntil_usec=%llu\n", (unsigned long long) now + 1);
        tmpdir_write(dir, "sde", text);
        ASSERT_INT_EQ(hold_check(dir, "sde", now, &h), -EBADMSG);
        /* a FIFO does not block the daemon */
        ASSERT_INT_EQ(mkfifo(fifo, 0600), 0);
        ASSERT_TRUE(hold_check(dir, "vdb", now, &h) < 0);
        ASSERT_INT_EQ(hold_parse("# comment\n\npid=7\nuntil_usec=99\n", &h), 0);
        ASSERT_INT_EQ(h.pid, 7);
        ASSERT_INT_EQ(h.until_usec, 99);
}

TEST_MAIN(T(buckets_tile_the_range_and_hold_their_values), T(percentiles_within_the_bucket_width_of_the_exact_ones),
          T(merge_adds_counts_and_extremes), T(a_candidate_wins_when_the_rounds_favour_it_beyond_chance),
          T(sign_test_p_values_are_the_binomial_tail), T(the_statistic_is_reproducible_and_refuses_bad_samples),
          T(block_stat_in_every_layout_and_the_load_of_two_samples),
          T(diskstats_every_disk_in_one_read_and_hostile_lines_skipped), T(inflight_is_two_counts_and_nothing_else),
          T(a_hold_is_honoured_until_its_deadline_or_its_holder_ends),
          T(a_hold_file_that_cannot_be_trusted_is_not_honoured))
