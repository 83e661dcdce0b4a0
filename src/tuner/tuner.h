/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>
#include <stdbool.h>

#include "blockstat.h"
#include "config.h"
#include "device.h"
#include "irq-counts.h"
#include "irq.h"
#include "plan.h"
#include "reconcile.h"
#include "topology.h"

/* The one pipeline both front ends run: collect -> plan -> reconcile.
 *
 * A Tuner owns what every run needs from the machine (the root, the paths below
 * it, the udev context, the CPU topology, the interrupt table, the plan context)
 * and the one piece of state that must outlive a run: which NVMe controllers it
 * rebound already. `iotunectl` makes one per command and calls tuner_run();
 * the daemon keeps one for its lifetime and plans and reconciles disk by disk as
 * udev announces them, through the same calls tuner_run() is made of. Neither
 * front end assembles the pipeline itself.
 *
 * Functions return -errno and log at debug level only, except where a comment
 * says what they report: the front ends decide what the user sees. */
typedef struct Tuner {
        char *root;              /* "" for the real system, or a test tree (--root) without a trailing "/" */
        ConfigPaths paths;
        /* Paths iotuned writes, resolved inside the root once (rootfs.h). */
        char *originals_dir;     /* <root>/run/iotuned/originals */
        char *modprobe_dropin;   /* <root>/etc/modprobe.d/iotuned-nvme.conf */
        char *hold_dir;          /* <root>/run/iotuned/hold: disks `iotunectl tune` holds (hold.h) */
        struct udev *udev;
        Topology topology;
        IrqTable irqs;           /* /proc/interrupts: vector names, see tuner_refresh_irqs() */
        PlanContext ctx;
        /* nvme_rebind_key() of every controller rebound by this Tuner: a profile's
         * `apply: rebind` rebinds a controller once per set of queue counts, so
         * one that comes back short is not rebound forever. */
        char **rebound;
        /* Identify every NVMe controller tuner_plan() plans (the one-shot commands,
         * whose reports show each controller's facts). Otherwise a controller is
         * asked only when one of its rows needs the answer (reconcile_device()):
         * the daemon on a fleet of disks without controller rows sends no admin
         * command and never loads libnvme. */
        bool identify_all;
} Tuner;

/* root: NULL, "" or "/" for the real system. config_dir: NULL for the standard
 * search path, or the only configuration directory. Reads the topology and
 * /proc/interrupts; logs what it cannot do (with the path). */
int tuner_init(Tuner *t, const char *root, const char *config_dir);
void tuner_done(Tuner *t);

/* `path` (absolute, as on the real system) resolved inside the Tuner's root. */
int tuner_resolve(const Tuner *t, const char *path, char **ret);

/* config_load() on the Tuner's paths. */
int tuner_load_config(const Tuner *t, Config **ret, Diag *ret_diag);

/* Re-read the CPU topology (CPUs isolated or brought online since); on failure
 * the previous one stays. */
int tuner_reload_topology(Tuner *t);

/* Re-read /proc/interrupts (vectors come and go with devices); on failure the
 * previous names stay. */
void tuner_refresh_irqs(Tuner *t);

/* Per-CPU counts of the vectors `irqs` (all numeric rows when n_irqs is 0) from
 * the root's /proc/interrupts, stamped with the monotonic clock. */
int tuner_read_irq_counts(const Tuner *t, const unsigned *irqs, size_t n_irqs, IrqCounts *ret);

/* Every disk's stat from the root's /proc/diskstats, in one read (blockstat.h). */
int tuner_read_diskstats(const Tuner *t, DiskStats *ret);

/* The disk at `syspath` (a udev event's), probed: -ENODEV when it is gone
 * already or is not a disk iotuned tunes. */
int tuner_probe(Tuner *t, const char *syspath, Device **ret);

/* The configuration's choice of which kinds of disks to discover. */
DiscoveryFilter tuner_discovery_filter(const Config *c);
/* Every disk the configuration's discovery filter admits. */
int tuner_enumerate(Tuner *t, const Config *c, DeviceList *ret);
/* The named disks; on failure *ret_bad is the name that failed (device_lookup()'s
 * -errno: -ENOENT, -ENODEV, -EISDIR for a partition, -ENOTBLK, -EINVAL). */
int tuner_lookup(Tuner *t, char *const *names, DeviceList *ret, const char **ret_bad);

/* Plan the disks of `devices` (moved out of it): every disk when `names` is
 * empty, otherwise the named ones, planned within the plan of every disk so that
 * a vector shared by several disks of one PCI function is planned with the same
 * disk whichever is named. Under --root, vector files are confined to the root.
 * targets: the module-wide NVMe queue counts every disk's plan wants. */
int tuner_plan(Tuner *t, const Config *c, char *const *names, DeviceList *devices, Plan *ret,
               int targets[_KNOB_MAX]);

/* Plan one disk (a hotplug, a drift re-plan) beside the plans in `current`: the
 * vectors and controller rows one of those already plans are dropped, and
 * targets says what every plan of `current` and the new one want together.
 * Takes ownership of `d`. */
int tuner_plan_device(Tuner *t, const Config *c, Device *d, const Plan *current, DevicePlan **ret,
                      int targets[_KNOB_MAX]);

/* The options every reconcile of this Tuner runs with: its originals record and
 * modprobe drop-in, `targets`, and its rebound controllers. allow_rebind: a
 * profile's `apply: rebind` may rebind an idle controller in this call. */
ReconcileOptions tuner_options(const Tuner *t, ReconcileMode mode, const int *targets, bool allow_rebind);

/* reconcile_device() with those options; a controller rebound by it is added to
 * the Tuner's rebound list. */
int tuner_reconcile_device(Tuner *t, DevicePlan *p, ReconcileMode mode, const int *targets, bool allow_rebind);
/* The same for several disks (reconcile_devices(): at once where they can be);
 * results[i] is what tuner_reconcile_device() would have returned for plans[i].
 * 0, or -ENOMEM. */
int tuner_reconcile_devices(Tuner *t, DevicePlan *const *plans, size_t n, ReconcileMode mode, const int *targets,
                            bool allow_rebind, int *results);

/* Drop from `p` every plan of the controller at PCI `address` (its disks are
 * gone and come back as new devices once it is rebound). */
void tuner_forget_controller(Plan *p, const char *address);

/* The whole pipeline over the named disks (every disk when `names` is empty):
 * plan, reconcile in `mode`; when a controller was rebound, wait for udev and
 * plan and reconcile afresh (the second pass), the rows of the first pass saying
 * what the rebind did. *ret_lost: one line per rebound controller none of whose
 * disks came back ("nvme0 (0000:01:00.0): rebound; none of its disks is back.").
 * On a lookup failure *ret_bad names the disk (see tuner_lookup()). */
int tuner_run(Tuner *t, const Config *c, char *const *names, ReconcileMode mode, Plan *ret, char ***ret_lost,
              const char **ret_bad);

/* Return only the knobs in `knobs` (true = restore) and the vectors in `irqs`
 * of the disk `name` to their recorded originals: restore_knobs() on the Tuner's
 * record, for knobs a new plan of the disk no longer sets. */
int tuner_restore_knobs(Tuner *t, const char *name, const bool knobs[_KNOB_MAX], const int *irqs, size_t n_irqs,
                        DevicePlan **ret);

/* Return the named disks (all recorded when `names` is NULL or empty) to their
 * recorded originals: restore_originals() on the Tuner's record; `known` (may be
 * NULL) the disks the caller has probed already. */
int tuner_restore(Tuner *t, char *const *names, const Plan *known, Plan *ret, char ***ret_gone);
