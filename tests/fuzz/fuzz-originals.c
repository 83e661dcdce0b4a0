/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* originals_load(): /run/iotuned/originals/<disk>.json, read back by
 * `iotunectl restore` and the daemon on stop (a file an earlier run, possibly a
 * crashed one, left behind), then turned into a restore plan the way
 * restore_originals() does (plan_device_from_values). Two disks of that name:
 * one with a diskseq, one from a kernel without. */
#include "device.h"
#include "fuzz-util.h"
#include "originals.h"
#include "plan.h"
#include "util.h"

static Device *disk(const char *diskseq) {
        Device *d = calloc(1, sizeof(Device));
        if (!d)
                abort();
        d->name = strdup("nvme0n1");
        d->syspath = strdup("/sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1");
        d->transport = strdup("pcie");
        d->diskseq = diskseq ? strdup(diskseq) : NULL;
        d->has_mq = true;
        d->numa_node = -1;
        d->nvme = calloc(1, sizeof(NvmeCtrl));
        if (!d->name || !d->syspath || !d->transport || (diskseq && !d->diskseq) || !d->nvme)
                abort();
        d->nvme->name = strdup("nvme0");
        d->nvme->transport = strdup("pcie");
        d->nvme->numa_node = -1;
        return d;
}

static void restore_plan(const char *dir, const char *diskseq) {
        char *values[_KNOB_MAX], **irqs = NULL;
        Device *d = disk(diskseq);
        DevicePlan *p = NULL;
        int r;

        r = originals_load(dir, d, values, &irqs);
        if (r < 0) {
                for (size_t k = 0; k < _KNOB_MAX; k++)
                        if (values[k])
                                abort(); /* every value is NULL unless it loaded */
                device_free(d);
                return;
        }
        r = plan_device_from_values(d, "original", values, irqs, "", &p);
        for (size_t k = 0; k < _KNOB_MAX; k++)
                free(values[k]);
        strv_free(irqs);
        if (r < 0)
                abort(); /* only -ENOMEM is possible */
        for (size_t i = 0; i < p->n_settings; i++)
                if (!p->settings[i].desired || !setting_label(&p->settings[i]))
                        abort();
        device_plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *dir, *path;
        char **names = NULL;

        if (!dir) {
                fuzz_mkdir("originals");
                dir = fuzz_path("originals");
                path = fuzz_path("originals/nvme0n1.json");
        }
        fuzz_write_file(path, data, size);
        restore_plan(dir, "17");
        restore_plan(dir, NULL);
        if (originals_list(dir, &names) < 0 || strv_length(names) != 1 || strcmp(names[0], "nvme0n1") != 0)
                abort();
        strv_free(names);
        return 0;
}
