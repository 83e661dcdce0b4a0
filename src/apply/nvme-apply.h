/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "knob.h"
#include "nvme-feature.h"
#include "nvme.h"

/* Reading and writing the NVMe rows of the knob table: controller features (APST,
 * interrupt coalescing) and the module-wide queue counts. reconcile.c is still the
 * only caller that writes; these are its back ends. */

/* A controller row's current value in the form knob->normalize() takes. 0;
 * -EOPNOTSUPP (the controller or transport has no such thing: *ret_why says why);
 * other -errno (*ret_why says what failed). */
int nvme_row_read(const NvmeCtrl *c, const Knob *k, char **ret_raw, char **ret_why);
/* 0 when the controller says the row cannot be changed (*ret_why says so), 1 when it
 * can or nobody knows: the write will tell. */
int nvme_row_changeable(const NvmeCtrl *c, const Knob *k, const char *canonical, char **ret_why);
/* Write the canonical value. Same returns. */
int nvme_row_write(const NvmeCtrl *c, const Knob *k, const char *canonical, char **ret_why);

/* The modprobe.d drop-in iotuned owns, e.g. /etc/modprobe.d/iotuned-nvme.conf.
 * values[KNOB_NVME_POLL_QUEUES] and values[KNOB_NVME_WRITE_QUEUES]: -1 = absent. */
#define NVME_MODPROBE_DROPIN "/etc/modprobe.d/iotuned-nvme.conf"
int nvme_dropin_read(const char *path, int values[_KNOB_MAX]);
/* Writes "options nvme ..." with every value >= 0, atomically; removes the file when
 * none is. */
int nvme_dropin_write(const char *path, const int values[_KNOB_MAX]);

/* The nvme driver's module state, from /sys/module/nvme. */
typedef enum NvmeModuleKind {
        NVME_MODULE_ABSENT,   /* not loaded */
        NVME_MODULE_LOADABLE, /* a loaded module: modprobe.d applies when it loads */
        NVME_MODULE_BUILTIN,  /* built in: only the kernel command line sets it */
} NvmeModuleKind;
#define NVME_SYSFS_MODULE "/sys/module/nvme"
NvmeModuleKind nvme_module_kind(const char *module_dir);

/* The queue maps of the controller's first namespace, as blk-mq numbers them now. */
int nvme_ctrl_queue_map(const char *ctrl_syspath, NvmeQueueMap *ret, char **ret_disk);

/* 1 and *ret_why when a namespace of the controller is mounted, held (LVM, MD, swap,
 * another exclusive opener), part of a multipath subsystem, or doing I/O (requests
 * in flight, or completed within a quarter second); 0 when idle. A process that
 * holds a namespace open without an exclusive claim and does no I/O is not seen. */
int nvme_ctrl_in_use(const NvmeCtrl *c, char **ret_why);

/* Set the live module parameters (values >= 0), unbind the controller's PCI function
 * from the nvme driver and bind it again, then wait (up to timeout_usec) until the
 * controller's namespaces are back. The caller has checked nvme_ctrl_in_use(). */
/* How long a rebound controller may take to come back live with its namespaces
 * (QEMU's: about 0.5 s under TCG). Below the unit's WatchdogSec=30s, because the
 * daemon waits in its event loop. */
#define NVME_REBIND_TIMEOUT_USEC (20 * 1000000ULL)
int nvme_ctrl_rebind(const NvmeCtrl *c, const int values[_KNOB_MAX], uint64_t timeout_usec, bool *ret_unbound,
                     NvmeQueueMap *ret_map, char **ret_why);

/* "PCI-ADDRESS poll_queues=N write_queues=M": one rebind of one controller for one
 * set of module values (values < 0 are left out). */
char *nvme_rebind_key(const NvmeCtrl *c, const int values[_KNOB_MAX]);

/* CPUs in /sys/devices/system/cpu/possible; 0 if unknown. */
unsigned possible_cpus(void);
