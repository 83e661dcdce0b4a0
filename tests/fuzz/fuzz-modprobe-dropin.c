/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nvme_dropin_read(): /etc/modprobe.d/iotuned-nvme.conf, which an administrator
 * may have edited. What it reads must survive nvme_dropin_write() and a second read. */
#include "fuzz-util.h"
#include "knob.h"
#include "nvme-apply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *path, *path2;
        int values[_KNOB_MAX], again[_KNOB_MAX];

        if (!path) {
                path = fuzz_path("modprobe.d/iotuned-nvme.conf");
                path2 = fuzz_path("rewritten/iotuned-nvme.conf");
                fuzz_mkdir("modprobe.d");
                fuzz_mkdir("rewritten");
        }
        fuzz_write_file(path, data, size);
        if (nvme_dropin_read(path, values) < 0)
                return 0;
        for (size_t k = 0; k < _KNOB_MAX; k++)
                if (values[k] < -1)
                        abort();
        if (nvme_dropin_write(path2, values) < 0)
                abort();
        if (nvme_dropin_read(path2, again) < 0 || memcmp(values, again, sizeof(values)) != 0)
                abort();
        (void) unlink(path2);
        return 0;
}
