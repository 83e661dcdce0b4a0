/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the configuration is read from: the search path under a root, or one --config directory. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "config-internal.h"
#include "util.h"

void config_paths_done(ConfigPaths *p) {
        assert(p);

        p->dirs = strv_free(p->dirs);
}

int config_paths_default(const char *root, const char *config_dir, ConfigPaths *ret) {
        static const char *const std[] = { IOTUNED_ETC_DIR, IOTUNED_RUN_DIR, IOTUNED_VENDOR_DIR };
        ConfigPaths p = { .builtin = true };

        assert(ret);

        if (config_dir) {
                if (strv_extend(&p.dirs, config_dir) < 0)
                        return -ENOMEM;
        } else
                for (size_t i = 0; i < ELEMENTSOF(std); i++) {
                        char *d = path_join(root && !streq(root, "/") ? root : "", std[i]);
                        if (!d || strv_push(&p.dirs, d) < 0) {
                                config_paths_done(&p);
                                return -ENOMEM;
                        }
                }
        *ret = p;
        return 0;
}
