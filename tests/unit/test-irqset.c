/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The set arithmetic of the irqbalance ban policy (src/daemon/irqset.c). */
#include <stdlib.h>

#include "irqset.h"
#include "tests.h"
#include "util.h"

TEST(add_dedupes) {
        _cleanup_free_ unsigned *a = NULL;
        size_t n = 0;

        ASSERT_INT_EQ(irqset_add(&a, &n, 40), 0);
        ASSERT_INT_EQ(irqset_add(&a, &n, 57), 0);
        ASSERT_INT_EQ(irqset_add(&a, &n, 40), 0);
        ASSERT_INT_EQ(irqset_add(&a, &n, 0), 0);
        ASSERT_INT_EQ(n, 3);
        ASSERT_TRUE(irqset_contains(a, n, 0));
        ASSERT_TRUE(irqset_contains(a, n, 57));
        ASSERT_TRUE(!irqset_contains(a, n, 41));
}

TEST(empty_sets) {
        _cleanup_free_ char *s = irqset_format(NULL, 0);
        unsigned *copy = (unsigned *) 1;

        ASSERT_TRUE(!irqset_contains(NULL, 0, 1));
        ASSERT_TRUE(irqset_equal(NULL, 0, NULL, 0));
        ASSERT_STREQ(s, "");
        ASSERT_INT_EQ(irqset_copy(NULL, 0, &copy), 0);
        ASSERT_TRUE(copy == NULL);
        irqset_sort(NULL, 0);
}

TEST(equality_ignores_order) {
        const unsigned a[] = { 3, 1, 2 }, b[] = { 1, 2, 3 }, c[] = { 1, 2, 4 }, d[] = { 1, 2 };

        ASSERT_TRUE(irqset_equal(a, 3, b, 3));
        ASSERT_TRUE(irqset_equal(b, 3, a, 3));
        ASSERT_TRUE(!irqset_equal(a, 3, c, 3));
        ASSERT_TRUE(!irqset_equal(a, 3, d, 2));
        ASSERT_TRUE(!irqset_equal(d, 2, a, 3));
        ASSERT_TRUE(!irqset_equal(a, 3, NULL, 0));
}

TEST(format_sorts_without_touching_the_set) {
        const unsigned a[] = { 57, 40, 4294967295u, 41 };
        _cleanup_free_ char *s = irqset_format(a, 4);

        ASSERT_STREQ(s, "40 41 57 4294967295");
        ASSERT_INT_EQ(a[0], 57);
}

TEST(copy_and_sort) {
        const unsigned a[] = { 9, 7, 8 };
        _cleanup_free_ unsigned *c = NULL;

        ASSERT_INT_EQ(irqset_copy(a, 3, &c), 0);
        irqset_sort(c, 3);
        ASSERT_INT_EQ(c[0], 7);
        ASSERT_INT_EQ(c[1], 8);
        ASSERT_INT_EQ(c[2], 9);
        ASSERT_TRUE(irqset_equal(a, 3, c, 3));
}

/* The policy's "send (current - ours before) + ours now", done with these calls
 * as bankeeper.c does: irqbalance's own bans survive, ours are replaced. */
TEST(ban_set_of_a_sync) {
        const unsigned current[] = { 10, 40, 41 }, ours_before[] = { 40, 41 }, want[] = { 41, 57 };
        _cleanup_free_ unsigned *next = NULL, *own = NULL;
        _cleanup_free_ char *s = NULL;
        size_t n_next = 0, n_own = 0;
        const unsigned expected[] = { 10, 41, 57 };

        for (size_t i = 0; i < 3; i++)
                if (!irqset_contains(ours_before, 2, current[i])) {
                        ASSERT_INT_EQ(irqset_add(&own, &n_own, current[i]), 0);
                        ASSERT_INT_EQ(irqset_add(&next, &n_next, current[i]), 0);
                }
        for (size_t i = 0; i < 2; i++)
                ASSERT_INT_EQ(irqset_add(&next, &n_next, want[i]), 0);
        ASSERT_TRUE(irqset_equal(next, n_next, expected, 3));
        ASSERT_TRUE(!irqset_equal(next, n_next, current, 3)); /* a change: sent */
        s = irqset_format(own, n_own);
        ASSERT_STREQ(s, "10");
}

TEST_MAIN(T(add_dedupes), T(empty_sets), T(equality_ignores_order), T(format_sorts_without_touching_the_set),
          T(copy_and_sort), T(ban_set_of_a_sync))
