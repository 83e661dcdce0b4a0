/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A minimal TAP harness: each TEST() is one "ok/not ok" line, a failing assertion
 * prints where and what, and the process exit code says whether all passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct TestCase {
        const char *name;
        void (*fn)(void);
} TestCase;

extern int test_failed_flag;

#define ASSERT_TRUE(expr)                                                                     \
        do {                                                                                  \
                if (!(expr)) {                                                                \
                        fprintf(stderr, "# %s:%d: assertion failed: %s\n", __FILE__, __LINE__, \
                                #expr);                                                       \
                        test_failed_flag = 1;                                                 \
                        return;                                                               \
                }                                                                             \
        } while (0)

#define ASSERT_INT_EQ(a, b)                                                                          \
        do {                                                                                         \
                long long _a = (long long) (a), _b = (long long) (b);                                \
                if (_a != _b) {                                                                      \
                        fprintf(stderr, "# %s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, \
                                #a, #b, _a, _b);                                                     \
                        test_failed_flag = 1;                                                        \
                        return;                                                                      \
                }                                                                                    \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                         \
        do {                                                                                       \
                const char *_a = (a), *_b = (b);                                                   \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
                        fprintf(stderr, "# %s:%d: %s == %s failed:\n#   got      '%s'\n#   expected '%s'\n", \
                                __FILE__, __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); \
                        test_failed_flag = 1;                                                      \
                        return;                                                                    \
                }                                                                                  \
        } while (0)

/* Either both NULL or equal strings. */
#define ASSERT_STREQ_OR_NULL(a, b)                                                                 \
        do {                                                                                       \
                const char *_n = (a), *_m = (b);                                                   \
                if (_n || _m)                                                                      \
                        ASSERT_STREQ(_n, _m);                                                      \
        } while (0)

#define TEST(n) static void test_##n(void)
#define T(n) { #n, test_##n }

static inline int run_tests(const TestCase *cases, size_t n) {
        int failures = 0;
        printf("1..%zu\n", n);
        for (size_t i = 0; i < n; i++) {
                test_failed_flag = 0;
                cases[i].fn();
                printf("%s %zu - %s\n", test_failed_flag ? "not ok" : "ok", i + 1, cases[i].name);
                failures += test_failed_flag;
        }
        return failures ? 1 : 0;
}

#define TEST_MAIN(...)                                                  \
        int test_failed_flag;                                           \
        int main(void) {                                                \
                static const TestCase cases[] = { __VA_ARGS__ };        \
                return run_tests(cases, sizeof(cases) / sizeof(cases[0])); \
        }
