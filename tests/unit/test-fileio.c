/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The shared readers and the attribute writer never block on, or read from,
 * anything but a regular file: a FIFO planted where a config file, a sysfs
 * attribute or /proc/interrupts is expected used to hang every verb. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "tests.h"
#include "tmpdir.h"

TEST(fifo_is_refused_without_blocking) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *fifo = path_join(dir, "fifo");
        char *text = NULL;

        ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
        /* With no writer, a blocking open(2) would never return. */
        ASSERT_INT_EQ(read_full_file(fifo, 4096, &text), -EBADFD);
        ASSERT_INT_EQ(read_attr(fifo, &text), -EBADFD);
        ASSERT_INT_EQ(read_regular_file(fifo, 4096, &text), -EBADFD);
        /* With no reader, a non-blocking open for writing is ENXIO; never a hang. */
        ASSERT_INT_EQ(write_attr(fifo, "1"), -ENXIO);
        ASSERT_TRUE(text == NULL);
        tmpdir_remove(dir);
}

TEST(fifo_with_reader_is_not_written) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *fifo = path_join(dir, "fifo");
        _cleanup_close_ int rfd = -1;
        char buf[16];

        ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
        rfd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_TRUE(rfd >= 0);
        ASSERT_INT_EQ(write_attr(fifo, "1"), -EBADFD);
        /* Nothing reached the reader. */
        ASSERT_TRUE(read(rfd, buf, sizeof buf) <= 0);
        tmpdir_remove(dir);
}

TEST(directory_and_device) {
        char *dir = tmpdir_new();
        char *text = NULL;

        ASSERT_INT_EQ(read_full_file(dir, 4096, &text), -EISDIR);
        ASSERT_INT_EQ(read_attr("/dev/null", &text), -EBADFD);
        ASSERT_INT_EQ(read_full_file("/dev/zero", 4096, &text), -EBADFD);
        ASSERT_INT_EQ(write_attr("/dev/null", "1"), -EBADFD);
        ASSERT_INT_EQ(write_attr(dir, "1"), -EISDIR);
        ASSERT_TRUE(text == NULL);
        tmpdir_remove(dir);
}

TEST(regular_files_and_limits) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *p = path_join(dir, "attr");
        _cleanup_free_ char *link = path_join(dir, "link");
        char *text = NULL;

        tmpdir_write(dir, "attr", "mq-deadline\n\n");
        ASSERT_INT_EQ(read_attr(p, &text), 0);
        ASSERT_STREQ(text, "mq-deadline");
        free(text), text = NULL;

        ASSERT_INT_EQ(write_attr(p, "none"), 0);
        ASSERT_INT_EQ(read_attr(p, &text), 0);
        ASSERT_STREQ(text, "none");
        free(text), text = NULL;

        /* Limits: one byte over is refused, exactly the limit is read. */
        tmpdir_write(dir, "attr", "0123456789");
        ASSERT_INT_EQ(read_full_file(p, 9, &text), -EFBIG);
        ASSERT_INT_EQ(read_regular_file(p, 9, &text), -EFBIG);
        ASSERT_INT_EQ(read_full_file(p, 10, &text), 0);
        free(text), text = NULL;

        /* read_full_file follows links (sysfs is made of them); read_regular_file
         * does not (records another process may have planted). */
        ASSERT_TRUE(symlink("attr", link) == 0);
        ASSERT_INT_EQ(read_full_file(link, 64, &text), 0);
        ASSERT_STREQ(text, "0123456789");
        free(text), text = NULL;
        ASSERT_INT_EQ(read_regular_file(link, 64, &text), -ELOOP);
        tmpdir_remove(dir);
}

/* read_attr() stops at the first short read; a value that fills its first
 * buffer (4 KiB) and the next ones is read on to the end, whole. */
TEST(attributes_past_the_first_buffer) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *p = path_join(dir, "cpu_list"), *big = malloc(20001);
        char *text = NULL;

        ASSERT_TRUE(big != NULL);
        static const size_t sizes[] = { 4095, 4096, 4097, 8192, 20000 };
        for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
                size_t n = sizes[k];
                for (size_t i = 0; i < n; i++)
                        big[i] = (char) ('0' + i % 10);
                big[n] = 0;
                tmpdir_write(dir, "cpu_list", big);
                ASSERT_INT_EQ(read_attr(p, &text), 0);
                ASSERT_INT_EQ((int) strlen(text), (int) n);
                ASSERT_STREQ(text, big);
                free(text), text = NULL;
        }
        tmpdir_remove(dir);
}

TEST(descriptor_readers) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *p = path_join(dir, "f"), *fifo = path_join(dir, "fifo");
        _cleanup_close_ int fd = -1, ffd = -1;
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        f = fopen(p, "we");
        ASSERT_TRUE(f != NULL);
        fwrite("a\0b\n", 1, 4, f);
        fclose(f);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        /* raw: the NUL inside and the newline stay, with the length */
        ASSERT_INT_EQ(read_fd_full(fd, 4, &text, &len), 0);
        ASSERT_INT_EQ((int) len, 4);
        ASSERT_TRUE(memcmp(text, "a\0b\n", 5) == 0);
        free(text), text = NULL;
        ASSERT_TRUE(lseek(fd, 0, SEEK_SET) == 0);
        ASSERT_INT_EQ(read_fd_full(fd, 3, &text, &len), -EFBIG);
        ASSERT_TRUE(lseek(fd, 0, SEEK_SET) == 0);
        ASSERT_INT_EQ(read_regular_fd(fd, 64, &text), 0);
        ASSERT_STREQ(text, "a");
        free(text), text = NULL;
        /* a FIFO's descriptor is refused before any read */
        ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
        ffd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_TRUE(ffd >= 0);
        ASSERT_INT_EQ(read_regular_fd(ffd, 64, &text), -EBADFD);
        ASSERT_TRUE(text == NULL);
        tmpdir_remove(dir);
}

TEST(error_text) {
        ASSERT_STREQ(file_strerror(-EBADFD), "not a regular file");
        ASSERT_STREQ(file_strerror(-ENOENT), "No such file or directory");
}

/* write_file_atomic makes the directories it is missing (only then: it tries the
 * file first), in either temporary mode, and refuses a path whose parent is a
 * file. */
TEST(atomic_write_makes_missing_directories) {
        char *dir = tmpdir_new();
        _cleanup_free_ char *deep = path_join(dir, "a/b/c/record.json"), *excl = path_join(dir, "x/y/record.json"),
                            *under_file = path_join(dir, "file/sub/record.json");
        char *text = NULL;

        ASSERT_INT_EQ(write_file_atomic(deep, "one", 3), 0);
        ASSERT_INT_EQ(read_full_file(deep, 64, &text), 0);
        ASSERT_STREQ(text, "one");
        free(text);
        ASSERT_INT_EQ(write_file_atomic_full(excl, "two", 3, WRITE_FILE_EXCL_TEMP), 0);
        ASSERT_INT_EQ(read_full_file(excl, 64, &text), 0);
        ASSERT_STREQ(text, "two");
        free(text);
        tmpdir_write(dir, "file", "x");
        ASSERT_TRUE(write_file_atomic(under_file, "three", 5) < 0);
        tmpdir_remove(dir);
}

/* read_attr_kept: a sysfs attribute's descriptor stays open within the budget and
 * later reads go through it; anything else, or past the budget, is read_attr(); a
 * kept descriptor that stops answering is dropped for the path. (That a pread()
 * of a kept sysfs descriptor sees a new value is the kernel's, shown in the VM
 * suite: every drift check reads through one.) */
TEST(kept_attribute_descriptors) {
        const char *attr = "/sys/devices/system/cpu/online";
        char *dir = tmpdir_new(), *text = NULL, *plain = NULL;
        _cleanup_free_ char *file = path_join(dir, "value");
        KeptAttr a = {}, b = {}, c = {};

        ASSERT_INT_EQ(read_attr(attr, &plain), 0);
        /* No budget (the CLI): nothing kept. */
        ASSERT_INT_EQ(read_attr_kept(attr, NULL, &a, &text), 0);
        ASSERT_STREQ(text, plain);
        free(text);
        ASSERT_TRUE(!a.open);

        kept_attr_set_budget(1);
        ASSERT_INT_EQ(read_attr_kept("/sys/devices/system/cpu", "online", &a, &text), 0);
        ASSERT_STREQ(text, plain);
        free(text);
        ASSERT_TRUE(a.open);
        ASSERT_INT_EQ(kept_attr_count(), 1);
        /* Through the kept descriptor: no path is needed any more. */
        ASSERT_INT_EQ(read_attr_kept("/nonexistent", NULL, &a, &text), 0);
        ASSERT_STREQ(text, plain);
        free(text);
        /* The budget is spent: read, not kept. */
        ASSERT_INT_EQ(read_attr_kept(attr, NULL, &b, &text), 0);
        ASSERT_STREQ(text, plain);
        free(text);
        ASSERT_TRUE(!b.open);
        kept_attr_close(&a);
        ASSERT_INT_EQ(kept_attr_count(), 0);

        /* Not sysfs: read, never kept (a rename would leave it reading the old file). */
        tmpdir_write(dir, "value", "42\n");
        ASSERT_INT_EQ(read_attr_kept(file, NULL, &c, &text), 0);
        ASSERT_STREQ(text, "42");
        free(text);
        ASSERT_TRUE(!c.open);
        ASSERT_TRUE(c.elsewhere);
        ASSERT_INT_EQ(kept_attr_count(), 0);

        /* A kept descriptor that fails (here a directory's, EISDIR; a removed
         * attribute's says ENODEV) is closed and the path read afresh. */
        ASSERT_INT_EQ(read_attr_kept(attr, NULL, &b, &text), 0);
        free(text);
        ASSERT_TRUE(b.open);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0 && dup2(dfd, b.fd) == b.fd);
        ASSERT_TRUE(close(dfd) == 0);
        ASSERT_INT_EQ(read_attr_kept(file, NULL, &b, &text), 0);
        ASSERT_STREQ(text, "42");
        free(text);
        ASSERT_TRUE(!b.open); /* the file read afresh is not sysfs */
        ASSERT_INT_EQ(kept_attr_count(), 0);
        ASSERT_INT_EQ(read_attr_kept("/nonexistent", NULL, &b, &text), -ENOENT);
        kept_attr_set_budget(0);
        free(plain);
        tmpdir_remove(dir);
}

TEST_MAIN(T(fifo_is_refused_without_blocking), T(fifo_with_reader_is_not_written), T(directory_and_device),
          T(regular_files_and_limits), T(attributes_past_the_first_buffer), T(descriptor_readers), T(error_text),
          T(atomic_write_makes_missing_directories), T(kept_attribute_descriptors))
