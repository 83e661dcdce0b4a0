/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cpuset.h"
#include "macro.h"
#include "tests.h"

static char *roundtrip(const char *in) {
        CpuSet s = {};
        char *out = NULL;
        if (cpuset_parse(in, &s) < 0)
                return NULL;
        if (cpuset_format(&s, &out) < 0)
                out = NULL;
        cpuset_done(&s);
        return out;
}

#define ROUNDTRIP(in, want)                          \
        do {                                         \
                _cleanup_free_ char *_o = roundtrip(in); \
                ASSERT_STREQ(_o, want);              \
        } while (0)

TEST(simple_lists) {
        ROUNDTRIP("0", "0");
        ROUNDTRIP("0-3", "0-3");
        ROUNDTRIP("0,1,2,3", "0-3");
        ROUNDTRIP("3,2,1,0", "0-3");
        ROUNDTRIP("0-1,3", "0-1,3");
        ROUNDTRIP("5,7,9-10", "5,7,9-10");
        ROUNDTRIP("", "");
        ROUNDTRIP("\n", "");
        /* Only one trailing newline: text after a newline, or a comma before
         * the end, is an error, not an empty or shorter set (found by fuzzing). */
        ASSERT_TRUE(roundtrip("\n5") == NULL);
        ASSERT_TRUE(roundtrip(" \n0-3") == NULL);
        ASSERT_TRUE(roundtrip("0-3\n\n") == NULL);
        ASSERT_TRUE(roundtrip("0,\t\n") == NULL);
        ASSERT_TRUE(roundtrip("0,\t") == NULL);
        ROUNDTRIP("2\n", "2");
}

TEST(blk_mq_cpu_list_style) {
        /* block/blk-mq-sysfs.c prints "0, 1, 2" */
        ROUNDTRIP("0, 1, 2", "0-2");
        ROUNDTRIP("0, 2, 4, 6", "0,2,4,6");
        ROUNDTRIP("7", "7");
}

TEST(beyond_64_cpus) {
        ROUNDTRIP("0-127", "0-127");
        ROUNDTRIP("63-65", "63-65");
        ROUNDTRIP("64", "64");
        ROUNDTRIP("1,100-103,4095", "1,100-103,4095");
        CpuSet s = {};
        ASSERT_INT_EQ(cpuset_parse("0-255", &s), 0);
        ASSERT_INT_EQ(cpuset_count(&s), 256);
        ASSERT_TRUE(cpuset_contains(&s, 255));
        ASSERT_TRUE(!cpuset_contains(&s, 256));
        ASSERT_INT_EQ(cpuset_span(&s), 256);
        cpuset_done(&s);
}

TEST(holes_and_equality) {
        CpuSet a = {}, b = {};
        ASSERT_INT_EQ(cpuset_parse("0-3,8-11", &a), 0);
        ASSERT_INT_EQ(cpuset_parse("8, 9, 10, 11, 0, 1, 2, 3", &b), 0);
        ASSERT_TRUE(cpuset_equal(&a, &b));
        ASSERT_INT_EQ(cpuset_count(&a), 8);
        ASSERT_TRUE(!cpuset_contains(&a, 5));
        cpuset_done(&b);
        ASSERT_INT_EQ(cpuset_parse("0-3", &b), 0);
        ASSERT_TRUE(!cpuset_equal(&a, &b));
        cpuset_done(&a);
        cpuset_done(&b);
}

TEST(rejects_garbage) {
        CpuSet s = {};
        ASSERT_INT_EQ(cpuset_parse("a", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("3-1", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("1,", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("1-", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("-1", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("0x3", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("1 2", &s), -EINVAL);
        ASSERT_INT_EQ(cpuset_parse("0-4000000000", &s), -ERANGE);
        /* nothing was written on failure */
        ASSERT_INT_EQ(s.n_words, 0);
}

TEST_MAIN(T(simple_lists), T(blk_mq_cpu_list_style), T(beyond_64_cpus), T(holes_and_equality), T(rejects_garbage))
