/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files `iotunectl diagnose` and iotuned (at a conflict) read to name who
 * else writes a knob: a udev rules file, TuneD's active_profile and a profile
 * with its include (writers_scan()), from one input cut at "%%" lines. Whatever
 * the bytes, the scan ends, and each writer it reports is complete: a knob, a
 * source for a file's, and findings for every one that may match. */
#include "fuzz-util.h"
#include "writers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *root, *rules, *active, *conf, *parent, *sys;
        char *props[] = { (char *) "ID_MODEL=QEMU NVMe Ctrl", (char *) "DEVTYPE=disk", NULL };
        FuzzPiece p[4];
        WriterList l = {};
        FindingList f = {};
        Device d = {};
        size_t n;

        if (!root) {
                fuzz_mkdir("root/etc/udev/rules.d");
                fuzz_mkdir("root/etc/tuned/fuzz");
                fuzz_mkdir("root/usr/lib/tuned/base");
                fuzz_mkdir("root/sys/block/nvme0n1/queue");
                root = fuzz_path("root");
                rules = fuzz_path("root/etc/udev/rules.d/60-fuzz.rules");
                active = fuzz_path("root/etc/tuned/active_profile");
                conf = fuzz_path("root/etc/tuned/fuzz/tuned.conf");
                parent = fuzz_path("root/usr/lib/tuned/base/tuned.conf");
                sys = fuzz_path("root/sys/block/nvme0n1");
                char *rot = fuzz_path("root/sys/block/nvme0n1/queue/rotational");
                fuzz_write_file(rot, "0\n", 2);
                free(rot);
        }
        n = fuzz_split(data, size, p, 4);
        fuzz_write_file(rules, p[0].data, p[0].size);
        if (n > 1)
                fuzz_write_file(active, p[1].data, p[1].size);
        else
                fuzz_write_file(active, "fuzz\n", 5);
        fuzz_write_file(conf, n > 2 ? p[2].data : (const uint8_t *) "", n > 2 ? p[2].size : 0);
        fuzz_write_file(parent, n > 3 ? p[3].data : (const uint8_t *) "", n > 3 ? p[3].size : 0);

        d.name = (char *) "nvme0n1";
        d.syspath = sys;
        d.properties = props;
        if (writers_scan(root, &d, &l) < 0)
                abort(); /* only -ENOMEM, which a fuzzer does not see */
        for (size_t i = 0; i < l.n; i++) {
                const Writer *w = &l.items[i];
                if (!w->who || !w->knob || (w->kind == WRITER_UDEV_RULE && !w->source))
                        abort();
                if (!writers_for_knob(&l, w->knob) && w->match != WRITER_MATCH_NO)
                        abort();
        }
        if (writers_findings(&l, d.name, &f) < 0)
                abort();
        for (size_t i = 0; i < f.n; i++)
                if (!f.items[i].summary || !f.items[i].kind)
                        abort();
        finding_list_done(&f);
        writer_list_done(&l);
        return 0;
}
