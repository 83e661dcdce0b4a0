/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "plan.h"

/* The one path that reads and writes knobs. `plan`, `apply`, `verify`, `restore`
 * and (later) the daemon's udev and drift triggers all come through here; they
 * differ only in the mode, i.e. in whether writing is allowed. */
typedef enum ReconcileMode {
        RECONCILE_DRY_RUN,  /* read, compare, say what would change */
        RECONCILE_APPLY,    /* read, compare, write what differs, read back */
        RECONCILE_VERIFY,   /* read, compare, report differences as drift */
} ReconcileMode;

typedef struct ReconcileOptions {
        ReconcileMode mode;
        /* Record originals here before the first write to a disk; NULL: do not
         * (restore itself must not overwrite the record it restores from). */
        const char *originals_dir;
        /* The caller holds the originals lock already (originals_lock()), across
         * several disks: not taken again per disk. */
        bool originals_locked;
        /* The modprobe.d drop-in for the module-wide NVMe queue counts
         * (NVME_MODPROBE_DROPIN); NULL: those rows are only read, never written. */
        const char *modprobe_dropin;
        /* plan_module_targets() over every current plan, so that the drop-in holds the
         * largest value any profile wants; NULL: each row's own value. */
        const int *module_targets;
        /* A profile's `apply: rebind` may rebind an idle controller in this call, once
         * per controller: never those whose PCI address is in rebound_already. The
         * daemon does not rebind from a drift check. */
        bool allow_rebind;
        char *const *rebound_already;
        /* 1u << KnobScope of the rows to act on; 0: every row. Rows left out keep
         * what they had (a fresh plan's: nothing read, nothing written). The daemon
         * writes a hot-added disk's queue rows first, the rest at udev's event. */
        unsigned scopes;
        /* /sys/module/nvme, or a test tree's; NULL: the real one. */
        const char *nvme_module_dir;
} ReconcileOptions;

/* Fills every setting's effective, observed, state and note. Returns 0 when it
 * could run (per-setting failures are states, not return values), -errno only
 * for failures that stop the whole device (out of memory, originals not
 * recordable: no write happens without a record). */
int reconcile_device(DevicePlan *p, const ReconcileOptions *o);
int reconcile_plan(Plan *p, const ReconcileOptions *o);

/* The most threads reconcile_devices() runs (the caller's among them). */
#define RECONCILE_THREADS_MAX 16

/* reconcile_device() on each of `plans`, results[i] its return value. In APPLY
 * mode and without a rebind, the disks are reconciled at once, in up to
 * RECONCILE_THREADS_MAX threads, under one originals lock: a scheduler switch
 * freezes its queue and waits out RCU grace periods, tens of milliseconds each
 * that the disks' switches now share. Their queue rows run in parallel; the rows
 * disks share (module drop-in, controller, PCIe link, vectors) one disk at a
 * time. Otherwise one after the other. Returns 0. */
int reconcile_devices(DevicePlan *const *plans, size_t n, const ReconcileOptions *o, int *results);
