/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "knob.h"
#include "macro.h"
#include "pcie-link.h"
#include "util.h"

unsigned pcie_link_states(const char *link_dir) {
        unsigned mask = 0;

        if (!link_dir)
                return 0;
        for (size_t i = 0; i < ASPM_N_STATES; i++) {
                _cleanup_free_ char *p = path_join(link_dir, aspm_link_files[i]);
                if (p && access(p, F_OK) == 0)
                        mask |= 1u << i;
        }
        return mask;
}

static int set_why(char **ret_why, const char *fmt, ...) _printf_(2, 3);
static int set_why(char **ret_why, const char *fmt, ...) {
        va_list ap;
        char *w = NULL;

        assert(fmt);

        if (!ret_why)
                return 0;
        va_start(ap, fmt);
        if (vasprintf(&w, fmt, ap) < 0)
                w = NULL;
        va_end(ap);
        free(*ret_why);
        *ret_why = w;
        return 0;
}

int pcie_link_read(const char *link_dir, char **ret_raw, char **ret_why) {
        unsigned present, enabled = 0;

        assert(ret_raw);

        if (!link_dir) {
                set_why(ret_why, "not on a PCI function: no PCIe link");
                return -EOPNOTSUPP;
        }
        present = pcie_link_states(link_dir);
        if (present == 0) {
                /* drivers/pci/pcie/aspm.c aspm_ctrl_attrs_are_visible: no files when ASPM is
                 * disabled (pcie_aspm=off, no _OSC control) or there is no link state. */
                set_why(ret_why,
                        "%s has no ASPM files (no PCIe link to control, ASPM disabled by the firmware or "
                        "pcie_aspm=off, or a kernel before 5.5)",
                        link_dir);
                return -EOPNOTSUPP;
        }
        for (size_t i = 0; i < ASPM_N_STATES; i++) {
                _cleanup_free_ char *raw = NULL;
                int r;
                if (!(present & (1u << i)))
                        continue;
                r = read_attr_at(link_dir, aspm_link_files[i], &raw);
                if (r == -ENOENT)
                        continue; /* the link went away under us: the next read says so */
                if (r < 0) {
                        set_why(ret_why, "cannot read %s/%s: %s", link_dir, aspm_link_files[i], strerror(-r));
                        return r;
                }
                if (streq(strstrip(raw), "1"))
                        enabled |= 1u << i;
        }
        return aspm_states_to_string(enabled, ret_raw);
}

int pcie_link_changeable(const char *link_dir, const char *canonical, char **ret_why) {
        unsigned want, missing;
        _cleanup_free_ char *names = NULL;
        int r;

        assert(canonical);

        r = aspm_states_from_string(canonical, &want);
        if (r < 0)
                return r;
        missing = want & ~pcie_link_states(link_dir);
        if (missing == 0)
                return 1;
        if (aspm_states_to_string(missing, &names) < 0)
                return -ENOMEM;
        set_why(ret_why, "the link does not support %s (%s lists no such file)", names, link_dir ?: "link/");
        return 0;
}

int pcie_link_write(const char *link_dir, const char *canonical, char **ret_why) {
        unsigned want, present;
        int r;

        assert(canonical);

        if (!link_dir)
                return -EOPNOTSUPP;
        r = aspm_states_from_string(canonical, &want);
        if (r < 0)
                return r;
        present = pcie_link_states(link_dir);
        /* Every file is written, offs first and deepest first, then ons, L1 before its
         * substates: the result does not depend on whether this kernel's 0 to l1_aspm
         * also disables the substates (it does since 6.7 and its stable backports). */
        for (size_t i = ASPM_N_STATES; i-- > 0;)
                if ((present & (1u << i)) && !(want & (1u << i))) {
                        r = write_attr_at(link_dir, aspm_link_files[i], "0");
                        if (r < 0) {
                                set_why(ret_why, "writing 0 to %s/%s failed: %s", link_dir, aspm_link_files[i],
                                        strerror(-r));
                                return r;
                        }
                }
        for (size_t i = 0; i < ASPM_N_STATES; i++)
                if ((present & (1u << i)) && (want & (1u << i))) {
                        r = write_attr_at(link_dir, aspm_link_files[i], "1");
                        if (r < 0) {
                                set_why(ret_why, "writing 1 to %s/%s failed: %s", link_dir, aspm_link_files[i],
                                        strerror(-r));
                                return r;
                        }
                }
        return 0;
}
