/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "fileio.h"
#include "knob.h"
#include "macro.h"
#include "pcie-link.h"
#include "tmpdir.h"
#include "util.h"
#include "tests.h"

static char *file(const char *t, const char *name) {
        _cleanup_free_ char *p = path_join(t, name);
        char *v = NULL;

        if (!p || read_attr(p, &v) < 0)
                return NULL;
        return strstrip(v);
}

/* A link with L0s, L1 and the ASPM L1 substates (no PCI-PM ones): read, write, and
 * which values it cannot take. */
TEST(read_write_on_a_link) {
        char *t = tmpdir_new();
        _cleanup_free_ char *raw = NULL, *why = NULL, *a = NULL, *b = NULL, *c = NULL, *e = NULL;

        tmpdir_write(t, "l0s_aspm", "0\n");
        tmpdir_write(t, "l1_aspm", "1\n");
        tmpdir_write(t, "l1_1_aspm", "1\n");
        tmpdir_write(t, "l1_2_aspm", "0\n");
        ASSERT_INT_EQ(pcie_link_states(t), 0x0f);
        ASSERT_INT_EQ(pcie_link_read(t, &raw, &why), 0);
        ASSERT_STREQ(raw, "l1,l1_1");

        ASSERT_INT_EQ(pcie_link_changeable(t, "off", &why), 1);
        ASSERT_INT_EQ(pcie_link_changeable(t, "l0s,l1,l1_2", &why), 1);
        ASSERT_INT_EQ(pcie_link_changeable(t, "l1,l1_2_pcipm", &why), 0);
        ASSERT_TRUE(why && strstr(why, "does not support l1_2_pcipm"));

        /* off: 0 to every file there is, and no file is created. */
        ASSERT_INT_EQ(pcie_link_write(t, "off", &why), 0);
        free(raw);
        raw = NULL;
        ASSERT_INT_EQ(pcie_link_read(t, &raw, NULL), 0);
        ASSERT_STREQ(raw, "off");
        ASSERT_INT_EQ(pcie_link_states(t), 0x0f);

        /* l0s,l1: exactly those. */
        ASSERT_INT_EQ(pcie_link_write(t, "l0s,l1", &why), 0);
        a = file(t, "l0s_aspm");
        b = file(t, "l1_aspm");
        c = file(t, "l1_1_aspm");
        e = file(t, "l1_2_aspm");
        ASSERT_STREQ(a, "1");
        ASSERT_STREQ(b, "1");
        ASSERT_STREQ(c, "0");
        ASSERT_STREQ(e, "0");
        tmpdir_remove(t);
}

/* No files (no link, ASPM disabled, an old kernel) or no PCI function: unsupported,
 * with a reason. */
TEST(absent_files_are_unsupported) {
        char *t = tmpdir_new();
        _cleanup_free_ char *raw = NULL, *why = NULL, *why2 = NULL;

        ASSERT_INT_EQ(pcie_link_states(t), 0);
        ASSERT_INT_EQ(pcie_link_read(t, &raw, &why), -EOPNOTSUPP);
        ASSERT_TRUE(why && strstr(why, "has no ASPM files"));
        ASSERT_INT_EQ(pcie_link_read(NULL, &raw, &why2), -EOPNOTSUPP);
        ASSERT_TRUE(why2 && strstr(why2, "not on a PCI function"));
        ASSERT_INT_EQ(pcie_link_write(NULL, "off", NULL), -EOPNOTSUPP);
        tmpdir_remove(t);
}

TEST_MAIN(T(read_write_on_a_link), T(absent_files_are_unsupported))
