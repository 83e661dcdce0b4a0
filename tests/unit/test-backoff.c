/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The drift back-off schedule (src/daemon/backoff.c, iotuned(8) "Drift"). */
#include "backoff.h"
#include "tests.h"

#define S USEC_PER_SEC

/* n drifts, `gap` apart from `*now` on; the verdict of the last, its hold. */
static DriftVerdict drifts(SettingRuntime *rt, unsigned n, uint64_t gap, uint64_t *now, uint64_t *ret_hold) {
        DriftVerdict v = DRIFT_COUNTED;
        for (unsigned i = 0; i < n; i++) {
                *now += gap;
                v = backoff_note_drift(rt, *now, ret_hold);
        }
        return v;
}

TEST(four_drifts_in_a_window_are_no_conflict) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 1;

        ASSERT_INT_EQ(drifts(&rt, 4, 10 * S, &now, &hold), DRIFT_COUNTED);
        ASSERT_INT_EQ(hold, 0);
        ASSERT_INT_EQ(rt.drifts, 4);
        ASSERT_TRUE(!rt.conflict);
        ASSERT_TRUE(!backoff_held(&rt, now));
}

TEST(the_fifth_begins_a_conflict_held_30_s) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 0;

        (void) drifts(&rt, 4, 10 * S, &now, &hold);
        ASSERT_INT_EQ(drifts(&rt, 1, 10 * S, &now, &hold), DRIFT_CONFLICT_BEGINS);
        ASSERT_INT_EQ(hold, 30 * S);
        ASSERT_TRUE(rt.conflict);
        ASSERT_TRUE(backoff_held(&rt, now));
        ASSERT_TRUE(backoff_held(&rt, now + 30 * S - 1));
        ASSERT_TRUE(!backoff_held(&rt, now + 30 * S));
}

TEST(each_new_hold_of_an_episode_doubles_up_to_an_hour) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 0;
        const uint64_t expected[] = { 30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600 };

        for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
                DriftVerdict v = drifts(&rt, 5, 1 * S, &now, &hold);
                ASSERT_INT_EQ(v, i == 0 ? DRIFT_CONFLICT_BEGINS : DRIFT_CONFLICT_HOLDS);
                ASSERT_INT_EQ(hold, expected[i] * S);
                now += hold; /* written again once the hold is over, and reverted again */
        }
}

TEST(the_window_restarts_after_60_s) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 0;

        /* 4 drifts, then one 61 s later: a new window, so still no conflict */
        (void) drifts(&rt, 4, 1 * S, &now, &hold);
        ASSERT_INT_EQ(drifts(&rt, 1, 61 * S, &now, &hold), DRIFT_COUNTED);
        ASSERT_INT_EQ(rt.window_drifts, 1);
        /* drifts spread 16 s apart never reach 5 in one window either */
        ASSERT_INT_EQ(drifts(&rt, 20, 16 * S, &now, &hold), DRIFT_COUNTED);
        ASSERT_TRUE(!rt.conflict);
        ASSERT_INT_EQ(rt.drifts, 25);
}

TEST(an_episode_ends_after_5_min_quiet) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 0;

        (void) drifts(&rt, 5, 1 * S, &now, &hold);
        (void) drifts(&rt, 5, 1 * S, &now, &hold);
        ASSERT_INT_EQ(rt.backoff_level, 2);
        ASSERT_INT_EQ(hold, 60 * S);
        /* quiet is counted from the end of the hold: written again and not reverted
         * for 5 min after it */
        ASSERT_TRUE(!backoff_held(&rt, now + 60 * S + 300 * S));
        ASSERT_TRUE(rt.conflict);
        ASSERT_TRUE(!backoff_held(&rt, now + 60 * S + 300 * S + 1));
        ASSERT_TRUE(!rt.conflict);
        ASSERT_INT_EQ(rt.backoff_level, 0);
        /* the next conflict is a new episode: reported, and held 30 s again */
        now += 400 * S;
        ASSERT_INT_EQ(drifts(&rt, 5, 1 * S, &now, &hold), DRIFT_CONFLICT_BEGINS);
        ASSERT_INT_EQ(hold, 30 * S);
}

TEST(a_held_setting_is_no_episode_end) {
        SettingRuntime rt = { .conflict = true, .window_start_usec = 1, .hold_until_usec = 10000 * S,
                              .backoff_level = 7 };

        ASSERT_TRUE(backoff_held(&rt, 9000 * S));
        ASSERT_TRUE(rt.conflict);
        ASSERT_INT_EQ(rt.backoff_level, 7);
}

/* The drift check as the daemon runs it: every `interval`, a setting not held is
 * written, and a fighter that never stops reverts it before the next check. */
TEST(a_fighter_that_never_stops_is_held_up_to_an_hour) {
        SettingRuntime rt = {};
        uint64_t now = 1000 * S, hold = 0, longest = 0;
        unsigned conflicts = 0;

        for (unsigned check = 0; check < 20000; check++, now += 1 * S) {
                if (backoff_held(&rt, now))
                        continue;
                switch (backoff_note_drift(&rt, now, &hold)) {
                case DRIFT_CONFLICT_BEGINS:
                        conflicts++;
                        break;
                case DRIFT_CONFLICT_HOLDS:
                case DRIFT_COUNTED:
                        break;
                }
                longest = hold > longest ? hold : longest;
        }
        /* One episode, reported once, however long the holds get. */
        ASSERT_INT_EQ(conflicts, 1);
        ASSERT_INT_EQ(longest, 3600 * S);
}

TEST_MAIN(T(four_drifts_in_a_window_are_no_conflict), T(the_fifth_begins_a_conflict_held_30_s),
          T(each_new_hold_of_an_episode_doubles_up_to_an_hour), T(the_window_restarts_after_60_s),
          T(an_episode_ends_after_5_min_quiet), T(a_held_setting_is_no_episode_end),
          T(a_fighter_that_never_stops_is_held_up_to_an_hour))
