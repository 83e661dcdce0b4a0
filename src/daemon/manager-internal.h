/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the Manager's own files share; see manager.h for which file does what.
 * The calls run one way, down the chain manager.c -> reload.c -> hotplug.c ->
 * kernel-event.c -> tuning.c -> conflict.c (a file may skip links), with
 * manager.c -> drift.c -> kernel-event.c, tuning.c, conflict.c, load.c beside
 * it; any of them -> manager-publish.c and the components. A component's file
 * includes no Manager header and calls none of these files: what it needs of
 * the Manager comes through the callbacks the Manager gives its _new(). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "backoff.h"
#include "bankeeper.h"
#include "drift-check.h"
#include "event-clock.h"
#include "events.h"
#include "heap-trim.h"
#include "kernel-queue.h"
#include "manager.h"
#include "path-watch.h"
#include "publisher.h"
#include "udev-batch.h"
#include "util.h"

/* The time of the event being handled (event-clock.h). */
static inline uint64_t manager_now(Manager *m, clockid_t clock) {
        return event_now(m->event, clock);
}

/* A hot-added disk whose first tuning failed the way a removal in progress
 * explains is reported only once it is this old (tuning.c). */
#define PENDING_REPORT_USEC (5ULL * USEC_PER_SEC)

/* manager-publish.c: status.json (with the metrics) and STATUS=, of the state
 * now (publisher.h). */
void manager_write_status(Manager *m);
void manager_notify_status(Manager *m, const char *extra);
/* During long work (a start, a burst of hundreds of disks), at most every quarter
 * of the watchdog's period (publisher.h). */
static inline void manager_keepalive(Manager *m) {
        publisher_keepalive(m->publisher);
}

/* Bring irqbalance's bans in line with the plans, without waiting for it: the
 * exchange runs on the event loop, and status.json follows its end (bankeeper.h). */
static inline void manager_sync_irqbalance(Manager *m) {
        bankeeper_sync(m->bans);
}

/* tuning.c */
ssize_t manager_plan_index(const Manager *m, const char *name);
/* Keep `p` (taken) at the end of m->plan; -ENOMEM (p freed). */
int manager_plan_append(Manager *m, DevicePlan *p);
/* m->plan was changed as a whole (a reload, a controller's plans dropped): the
 * name index is built afresh at the next plan kept. */
void manager_plan_names_drop(Manager *m);
int manager_tune_device(Manager *m, Device *d);
int manager_tune_all(Manager *m);
void manager_forget_device(Manager *m, const char *name);
/* A hidden NVMe multipath path disk is gone (its controller was deleted or the
 * namespace detached): it sends no uevent of its own. `why` says what was seen. */
void manager_forget_path(Manager *m, const char *name, const char *why);
void manager_restore_dropped_knobs(Manager *m, const DevicePlan *old, const DevicePlan *new);
void manager_stamp_changes(Manager *m, DevicePlan *p);
int manager_retry_unrecorded(Manager *m, DevicePlan *p, const int *targets);
ssize_t manager_pending_index(const Manager *m, const char *name);
/* A disk's first tuning (udev's add, or its verification after the kernel's):
 * logged, unless the disk is being removed: nothing when it is gone already, and
 * a failure that may be the removal (an unreadable queue) reported only once it
 * is PENDING_REPORT_USEC old and the disk still there (drift.c). */
void manager_report_tuned(Manager *m, const DevicePlan *p);
void manager_pending_drop(Manager *m, const char *name);
bool device_vanished(const Device *d);
/* The same disk, not another one that took its name: the same diskseq, or, before
 * 5.15, the same sysfs path. */
bool manager_same_disk(const Device *a, const Device *b);
/* Whether `iotunectl tune` holds the disk (hold.h): not tuned, not corrected. The
 * first sight of a hold is logged; manager_release_holds() tunes the disk afresh
 * once its hold has ended. */
bool manager_disk_held(Manager *m, const char *name);
int manager_release_holds(Manager *m);

/* conflict.c: `s` of `p` drifted and was put back (s->previous is what it had):
 * counted, backed off from, and reported; a conflict names who else writes it. */
void manager_note_drift(Manager *m, DevicePlan *p, Setting *s, uint64_t now, DriftSeen seen);

/* load.c: the disk's load since the last drift check and its interrupts between
 * `prev` and `cur` (the last check's counts and this one's; NULL: not read), and
 * their findings; a new
 * warning is logged once, and stays until no sample has shown a warning for
 * FINDING_LINGER_USEC. Whether a warning appeared or went away. */
#define FINDING_LINGER_USEC (60ULL * USEC_PER_SEC)
bool manager_sample_load(Manager *m, DevicePlan *p, const DiskStats *stats, const IrqCounts *prev,
                         const IrqCounts *cur);

/* drift.c: the DriftCheck's run callback (manager_check_drift(), timed and logged). */
void manager_run_drift_check(void *userdata);
static inline int manager_arm_drift_timer(Manager *m) {
        return drift_check_arm(m->drift, m->config->reassert_usec);
}

/* hotplug.c */
int manager_watch_udev(Manager *m);
/* While a multipath path is planned, its controller's state is polled (path-watch.h). */
void manager_arm_path_poll(Manager *m);

/* kernel-event.c: the kernel's "add" of a disk, heard before udev's (which comes
 * after udev's rules ran): its queue rows are written at once. */
#define EARLY_WAIT_USEC (10 * USEC_PER_SEC)
int manager_watch_kernel(Manager *m);
/* The kernel sends a new disk's "add" event before it sets the disk's read-ahead
 * from its queue limits (block/genhd.c device_add_disk: disk_uevent(KOBJ_ADD), then
 * disk_update_readahead(), in 6.1, Debian 12's kernel): a read_ahead_kb written at
 * the kernel's event can be put back to the kernel's default a moment later, when
 * the thread adding the disk was preempted in between (seen under a burst of
 * null_blk disks in the test-bed guest, one disk in 128). Found at udev's event
 * holding exactly the value read before the early write, it is that, not a udev
 * rule (one writing the kernel's default back reads the same and is taken for it).
 * Then `s` (written again at udev's event) is reported from that value, and true
 * is returned: not drift. In tuning.c, beside the re-plan path that uses it too. */
bool manager_early_readahead_reset(const DevicePlan *p, Setting *s, const char *before_early);
/* Whether the configuration plans `d` the same before udev has run as after. */
bool manager_early_allowed(const Manager *m, const Device *d);
/* udev's "add" of a disk tuned at the kernel's event, whose plan has queue rows
 * only: verified at once instead of planned afresh (a row a udev rule rewrote
 * in between is put back and counted as drift). 1 when done, 0 when the disk
 * needs a fresh plan (other rows, another disk now, a profile pinned by udev),
 * -ENOMEM. */
int manager_verify_early(Manager *m, size_t i);
/* For a drift check: plan `i` was tuned early and waits for udev's event (1: leave
 * it), or waited EARLY_WAIT_USEC in vain and was tuned fully now (1), or is not
 * early (0); -ENOMEM. */
int manager_early_overdue(Manager *m, size_t i, uint64_t now);

/* reload.c */
int manager_load_config(Manager *m, bool reload, Config **ret);
int manager_reload(Manager *m);
