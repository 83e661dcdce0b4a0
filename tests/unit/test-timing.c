/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's timing spans: exclusive phase accounting and the line it logs. */
#include <string.h>
#include <time.h>

#include "log.h"
#include "tests.h"
#include "timing.h"
#include "util.h"

static void spin_usec(uint64_t usec) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;
        while (now_usec(CLOCK_MONOTONIC) < end)
                ;
}

TEST(phases_are_exclusive_and_add_up_to_the_wall_time) {
        TimingSpan s;

        log_set_max_level(LOG_DEBUG); /* the line would be logged: the span is measured */

        timing_begin(0, "udev batch");
        ASSERT_TRUE(timing_active());
        spin_usec(2000); /* other */
        timing_enter(TIMING_PROBE_UDEV);
        spin_usec(3000);
        timing_enter(TIMING_PROBE_NVME); /* pauses probe.udev */
        spin_usec(5000);
        timing_leave();
        spin_usec(1000); /* probe.udev again */
        timing_leave();
        timing_count_disk();
        timing_count_disk();
        timing_end(&s);
        ASSERT_TRUE(!timing_active());

        ASSERT_STREQ(s.trigger, "udev batch");
        ASSERT_INT_EQ(s.disks, 2);
        /* Phases are counted in the CPU's time-stamp counter and scaled to the wall
         * time at the end: within 1% of the spins (a clock slewed by NTP runs at
         * another rate than the counter). */
        ASSERT_TRUE(s.usec[TIMING_PROBE_NVME] >= 4950);
        ASSERT_TRUE(s.usec[TIMING_PROBE_UDEV] >= 3960);
        ASSERT_TRUE(s.usec[_TIMING_MAX] >= 1980);
        /* Exclusive: nested time is not counted twice, and everything is somewhere. */
        uint64_t sum = 0;
        for (unsigned p = 0; p <= _TIMING_MAX; p++)
                sum += s.usec[p];
        ASSERT_INT_EQ(sum, s.wall_usec);
        ASSERT_TRUE(s.usec[TIMING_PROBE_UDEV] < s.wall_usec - 5000);
        /* One thread: its CPU time within the wall time (how much of it it got depends on the load). */
        ASSERT_TRUE(s.cpu_usec > 0 && s.cpu_usec <= s.wall_usec + 1000);
}

TEST(marks_outside_a_span_do_nothing) {
        TimingSpan s;

        log_set_max_level(LOG_DEBUG); /* the line would be logged: the span is measured */

        timing_end(&s); /* none open */
        ASSERT_INT_EQ(s.wall_usec, 0);
        timing_enter(TIMING_WRITE);
        timing_leave();
        timing_count_disk();
        ASSERT_TRUE(!timing_active());
        { TIMING_SCOPE(TIMING_READ); }
        timing_begin(0, "drift check");
        {
                TIMING_SCOPE(TIMING_READ);
                spin_usec(1000);
        }
        timing_leave(); /* unbalanced: ignored */
        timing_end(&s);
        ASSERT_TRUE(s.usec[TIMING_READ] >= 990);
        ASSERT_INT_EQ(s.disks, 0);
}

TEST(a_start_counts_from_main) {
        TimingSpan s;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);

        log_set_max_level(LOG_DEBUG); /* the line would be logged: the span is measured */

        spin_usec(3000);
        timing_begin(t0, "start");
        timing_end(&s);
        ASSERT_TRUE(s.wall_usec >= 3000);
        ASSERT_TRUE(s.usec[_TIMING_MAX] >= 3000); /* before the span opened: other */
        /* A start time in the future is not believed. */
        timing_begin(now_usec(CLOCK_MONOTONIC) + 10 * 1000000ULL, "start");
        timing_end(&s);
        ASSERT_TRUE(s.wall_usec < 1000000);
}

TEST(the_line_names_phases_over_50_us) {
        TimingSpan s = {.trigger = "kernel add", .wall_usec = 23456, .cpu_usec = 12000, .disks = 1};
        _cleanup_free_ char *line = NULL;

        s.usec[TIMING_PROBE_UDEV] = 4100;
        s.usec[TIMING_WRITE] = 17000;
        s.usec[TIMING_JOURNAL] = 49; /* left out */
        s.usec[_TIMING_MAX] = 2307;
        ASSERT_INT_EQ(timing_format(&s, &line), 0);
        ASSERT_STREQ(line,
                     "kernel add: 23.5 ms wall, 12.0 ms CPU, 1 disk; probe.udev 4.1, reconcile.write 17.0, other 2.3");
        ASSERT_STREQ(timing_phase_name(TIMING_RECORD), "record");
        ASSERT_STREQ(timing_phase_name(_TIMING_MAX), "other");
}

/* The daemon without -v or --timing: nothing is measured (no clock is read at
 * the marks), and nothing is logged. */
TEST(a_span_that_would_not_be_logged_is_not_measured) {
        TimingSpan s;

        log_set_max_level(LOG_INFO);
        timing_log_level = LOG_DEBUG;
        timing_begin(0, "drift check");
        ASSERT_TRUE(!timing_active());
        {
                TIMING_SCOPE(TIMING_READ);
                spin_usec(1000);
        }
        timing_count_disk();
        timing_end(&s);
        ASSERT_INT_EQ(s.wall_usec, 0);
        ASSERT_INT_EQ(s.usec[TIMING_READ], 0);
        ASSERT_INT_EQ(s.disks, 0);
        /* --timing: logged at info, so measured without -v. */
        timing_log_level = LOG_INFO;
        timing_begin(0, "drift check");
        ASSERT_TRUE(timing_active());
        timing_end(&s);
        timing_log_level = LOG_DEBUG;
}

TEST_MAIN(T(phases_are_exclusive_and_add_up_to_the_wall_time), T(marks_outside_a_span_do_nothing),
          T(a_start_counts_from_main), T(the_line_names_phases_over_50_us),
          T(a_span_that_would_not_be_logged_is_not_measured))
