/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics textfile is written only into a directory its owner alone writes. */
#include <sys/stat.h>

#include "macro.h"
#include "metrics.h"
#include "tests.h"
#include "tmpdir.h"

TEST(metrics_dir_must_be_private) {
        char *t = tmpdir_new();
        _cleanup_free_ char *dir = path_join(t, "prom"), *file = path_join(t, "prom/iotuned.prom"),
                            *missing = path_join(t, "none/iotuned.prom"), *notdir = path_join(t, "f/x.prom");
        char *reason = NULL;

        ASSERT_INT_EQ(mkdir(dir, 0755), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), 0);
        ASSERT_TRUE(reason == NULL);

        ASSERT_INT_EQ(chmod(dir, 0775), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, dir) && strstr(reason, "mode 0775"));
        free(reason);
        reason = NULL;

        ASSERT_INT_EQ(chmod(dir, 01777), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid(), &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, "mode 1777"));
        free(reason);
        reason = NULL;

        ASSERT_INT_EQ(chmod(dir, 0755), 0);
        ASSERT_INT_EQ(metrics_check_dir(file, getuid() + 1, &reason), -EPERM);
        ASSERT_TRUE(reason && strstr(reason, "owner uid"));
        free(reason);
        reason = NULL;

        /* Not there yet: the writer creates it (root's, 0755). */
        ASSERT_INT_EQ(metrics_check_dir(missing, getuid(), &reason), 0);

        tmpdir_write(t, "f", "x");
        ASSERT_INT_EQ(metrics_check_dir(notdir, getuid(), &reason), -ENOTDIR);
        free(reason);
        tmpdir_remove(t);
}

TEST_MAIN(T(metrics_dir_must_be_private))
