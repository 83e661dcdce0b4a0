/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <stdlib.h>

#include "fileio.h"
#include "sysfs-attr.h"
#include "util.h"

char *attr_trimmed(struct udev_device *u, const char *attr) {
        assert(attr);

        /* Through fileio rather than libudev's sysattr cache, which would open a FIFO
         * in a test tree and wait on it forever: a regular file or nothing. */
        const char *syspath = u ? udev_device_get_syspath(u) : NULL;
        char *c = NULL;
        if (!syspath || read_attr_at(syspath, attr, &c) < 0)
                return NULL;
        if (!*strstrip(c)) {
                free(c);
                return NULL;
        }
        return c;
}
