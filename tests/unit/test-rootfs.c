/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --root: every path is resolved inside the root, with openat2(RESOLVE_IN_ROOT)
 * and with the by-hand resolution used where the kernel lacks it. */
#include <fcntl.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"
#include "rootfs.h"
#include "tests.h"
#include "tmpdir.h"

/* <out>/canary outside the root <out>/root; links to it in every spelling. */
static void make_tree(char **ret_out, char **ret_root) {
        char *out = tmpdir_new(), *root = path_join(out, "root"), *canary = path_join(out, "canary");
        char *up = NULL;
        tmpdir_write(out, "canary", "CANARY outside the root");
        tmpdir_write(root, "data/file", "inside");
        tmpdir_symlink(root, "proc/interrupts", canary);                 /* absolute, out */
        if (asprintf(&up, "../../../../../../../../..%s", canary) < 0)
                abort();
        tmpdir_symlink(root, "sys/block/x/queue/scheduler", up);         /* .. out */
        tmpdir_symlink(root, "sys/block/x/queue/nomerges", "/data/file"); /* absolute, in */
        tmpdir_symlink(root, "loop1", "loop2");
        tmpdir_symlink(root, "loop2", "/loop1");
        tmpdir_symlink(root, "run", "/etc");                             /* a directory link */
        {
                char *fifo = path_join(root, "fifo");
                if (!fifo || mkfifo(fifo, 0600) < 0)
                        abort();
                free(fifo);
        }
        free(up);
        free(canary);
        *ret_out = out;
        *ret_root = root;
}

static void check_root(bool openat2) {
        char *out, *root, *text = NULL, *p = NULL;
        rootfs_set_openat2(openat2);
        make_tree(&out, &root);

        ASSERT_INT_EQ(root_read_file(root, "/data/file", 4096, &text), 0);
        ASSERT_STREQ(text, "inside");
        free(text);
        text = NULL;
        ASSERT_INT_EQ(root_read_file(root, "/sys/block/x/queue/nomerges", 4096, &text), 0);
        ASSERT_STREQ(text, "inside");
        free(text);
        text = NULL;
        /* Links out of the root land inside it, where there is no canary. */
        ASSERT_INT_EQ(root_read_file(root, "/proc/interrupts", 4096, &text), -ENOENT);
        ASSERT_INT_EQ(root_read_file(root, "/sys/block/x/queue/scheduler", 4096, &text), -ENOENT);
        ASSERT_INT_EQ(root_read_file(root, "/../../../../canary", 4096, &text), -ENOENT);
        ASSERT_TRUE(text == NULL);
        ASSERT_INT_EQ(root_read_file(root, "/loop1", 4096, &text), -ELOOP);
        ASSERT_INT_EQ(root_read_file(root, "/fifo", 4096, &text), -EBADFD);
        ASSERT_INT_EQ(root_read_file(root, "/data", 4096, &text), -EISDIR);
        /* Untrusted files: not even a link that stays inside. */
        ASSERT_INT_EQ(root_read_regular_file(root, "/sys/block/x/queue/nomerges", 4096, &text), -ELOOP);
        ASSERT_INT_EQ(root_read_regular_file(root, "/proc/interrupts", 4096, &text), -ELOOP);
        ASSERT_INT_EQ(root_read_regular_file(root, "/fifo", 4096, &text), -EBADFD);
        ASSERT_INT_EQ(root_read_regular_file(root, "/data/file", 4096, &text), 0);
        ASSERT_STREQ(text, "inside");
        free(text);
        text = NULL;

        /* A path about to be created: its existing part resolved in the root. */
        ASSERT_INT_EQ(root_resolve(root, "/run/iotuned/originals", &p), 0);
        {
                _cleanup_free_ char *real = realpath(root, NULL), *want = NULL;
                ASSERT_TRUE(real);
                ASSERT_TRUE(asprintf(&want, "%s/etc/iotuned/originals", real) > 0);
                ASSERT_STREQ(p, want);
                free(p);
                p = NULL;
                free(want);
                want = NULL;
                ASSERT_INT_EQ(root_resolve(root, "/proc/interrupts", &p), 0);
                ASSERT_TRUE(str_startswith(p, real) && p[strlen(real)] == '/');
                ASSERT_TRUE(strstr(p + strlen(real), "/canary"));
                free(p);
                p = NULL;
                ASSERT_INT_EQ(root_resolve(root, "/data/file", &p), 0);
                ASSERT_TRUE(asprintf(&want, "%s/data/file", real) > 0);
                ASSERT_STREQ(p, want);
                free(p);
                p = NULL;
        }
        ASSERT_INT_EQ(root_resolve(root, "/loop1/x", &p), -ELOOP);
        ASSERT_INT_EQ(root_resolve(root, "/data/file/x", &p), -ENOTDIR);

        /* The real root: paths as they are. */
        ASSERT_INT_EQ(root_resolve("/", "/etc/x/../y", &p), 0);
        ASSERT_STREQ(p, "/etc/x/../y");
        free(p);
        tmpdir_remove(out);
        free(root);
        rootfs_set_openat2(true);
}

TEST(resolve_in_root_openat2) {
        check_root(true);
}

TEST(resolve_in_root_by_hand) {
        check_root(false);
}

TEST_MAIN(T(resolve_in_root_openat2), T(resolve_in_root_by_hand))
