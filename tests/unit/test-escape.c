/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "escape.h"
#include "tests.h"

static void check(const char *in, const char *want) {
        char *got = str_escape(in);
        char buf[256];
        if (!got || strcmp(got, want) != 0) {
                fprintf(stderr, "# str_escape: got '%s', expected '%s'\n", got ?: "(null)", want);
                test_failed_flag = 1;
        }
        str_escape_buf(in, buf, sizeof(buf));
        if (strcmp(buf, want) != 0) {
                fprintf(stderr, "# str_escape_buf: got '%s', expected '%s'\n", buf, want);
                test_failed_flag = 1;
        }
        if (strcmp(esc(in), want) != 0) {
                fprintf(stderr, "# esc: got '%s', expected '%s'\n", esc(in), want);
                test_failed_flag = 1;
        }
        free(got);
}

TEST(plain_text_unchanged) {
        check("", "");
        check("nvme0n1", "nvme0n1");
        check("[none] mq-deadline kyber", "[none] mq-deadline kyber");
        check("0-3,8", "0-3,8");
}

TEST(control_characters) {
        check("a\nb", "a\\nb");
        check("\x1b[31mred\x1b[0m", "\\e[31mred\\e[0m");
        check("\t\r\a\b\v\f", "\\t\\r\\a\\b\\v\\f");
        check("x\x01y\x7f", "x\\x01y\\x7f");
        check("back\\slash", "back\\\\slash");
}

TEST(utf8) {
        check("caf\xc3\xa9", "caf\xc3\xa9");                  /* é kept */
        check("\xe2\x82\xac 5", "\xe2\x82\xac 5");            /* € kept */
        check("\xf0\x9f\x92\xbe", "\xf0\x9f\x92\xbe");        /* 4-byte kept */
        check("\xff\xfe", "\\xff\\xfe");                      /* invalid bytes */
        check("\xc3", "\\xc3");                               /* truncated sequence */
        check("\xc3(", "\\xc3(");
        check("\xc0\xaf", "\\xc0\\xaf");                      /* overlong '/' */
        check("\xed\xa0\x80", "\\xed\\xa0\\x80");             /* surrogate */
        check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");    /* > U+10FFFF */
        check("\xc2\x9b" "2J", "\\xc2\\x9b2J");               /* C1 CSI */
}

TEST(null_is_null) {
        ASSERT_TRUE(str_escape(NULL) == NULL);
        ASSERT_TRUE(esc(NULL) == NULL);
}

TEST(truncation_never_splits_an_escape) {
        char buf[8];
        ASSERT_STREQ(str_escape_buf("abcdefghij", buf, sizeof(buf)), "abcd...");
        ASSERT_STREQ(str_escape_buf("ab\ncdefg", buf, sizeof(buf)), "ab\\n...");
        ASSERT_STREQ(str_escape_buf("abc\ncdefg", buf, sizeof(buf)), "abc...");
        ASSERT_STREQ(str_escape_buf("abc\xff", buf, sizeof(buf)), "abc\\xff");
        ASSERT_STREQ(str_escape_buf("abcd\xff", buf, sizeof(buf)), "abcd...");
        ASSERT_STREQ(str_escape_buf("abc\xe2\x82\xac" "defg", buf, sizeof(buf)), "abc...");
        ASSERT_STREQ(str_escape_buf("abcdefg", buf, sizeof(buf)), "abcdefg");
}

TEST(ring_of_slots) {
        const char *a = esc("one\n"), *b = esc("two\t");
        ASSERT_STREQ(a, "one\\n");
        ASSERT_STREQ(b, "two\\t");
}

TEST(fputs_escaped_writes_the_escape) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        ASSERT_TRUE(f);
        ASSERT_INT_EQ(fputs_escaped("a\x1b]0;x\x07", f), 0);
        fclose(f);
        ASSERT_STREQ(buf, "a\\e]0;x\\a");
        free(buf);
}

TEST_MAIN(T(plain_text_unchanged), T(control_characters), T(utf8), T(null_is_null),
          T(truncation_never_splits_an_escape), T(ring_of_slots), T(fputs_escaped_writes_the_escape))
