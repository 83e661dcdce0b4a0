/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Two small files `iotunectl tune` and iotuned read: a hold file
 * (/run/iotuned/hold/DISK, hold_check()) and a disk's /sys/block/X/stat
 * (blockstat_parse()), both fed the same bytes. A hold that parses must survive
 * hold_acquire() and be read back the same; a stat that parses must give a load
 * against itself that is refused (no time passed), never a division by zero.
 * The same bytes as /proc/diskstats (diskstats_parse(), last: it cuts the text):
 * the names come out sorted, each once, and each is found. */
#include "blockstat.h"
#include "fuzz-util.h"
#include "hold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *dir;
        char *text;
        Hold h, again;
        BlockStat s;
        BlockLoad l;

        if (!dir) {
                dir = fuzz_path("hold");
                fuzz_mkdir("hold");
        }
        text = strndup((const char *) data, size);
        if (!text)
                return 0;
        if (hold_parse(text, &h) == 0) {
                if (h.pid <= 0)
                        abort();
                if (hold_acquire(dir, "vda", h.pid, h.until_usec) < 0)
                        abort();
                if (hold_check(dir, "vda", 0, &again) < 0 && h.until_usec <= HOLD_MAX_USEC)
                        abort();
                (void) hold_release(dir, "vda");
        }
        if (blockstat_parse(text, &s) == 0) {
                s.sampled_usec = 1;
                if (blockstat_load(&s, &s, &l) != -EINVAL)
                        abort();
        }
        DiskStats ds;
        if (diskstats_parse(text, 1, &ds) == 0) {
                for (size_t i = 0; i < ds.n; i++) {
                        if (i && strcmp(ds.items[i - 1].name, ds.items[i].name) >= 0)
                                abort();
                        if (diskstats_find(&ds, ds.items[i].name) != &ds.items[i].stat)
                                abort();
                }
                diskstats_done(&ds);
        }
        free(text);
        return 0;
}
