/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

struct lh_table;

#include "config.h"
#include "plan.h"
#include "tuner.h"

/* The Manager's components, each with a header of its own (manager-internal.h
 * includes them). */
typedef struct BanKeeper BanKeeper;
typedef struct DriftCheck DriftCheck;
typedef struct HeapTrimmer HeapTrimmer;
typedef struct KernelQueue KernelQueue;
typedef struct PathWatch PathWatch;
typedef struct Publisher Publisher;
typedef struct UdevBatch UdevBatch;

/* The daemon: one Manager owns the event loop, the signal sources, the
 * configuration in force, the plan of every tuned disk and their drift history,
 * and one component per concern. The pipeline is its Tuner's, as for iotunectl:
 * every change to the machine still goes through reconcile().
 *
 * The components own their sd-event sources and state, and know nothing of the
 * Manager: it calls them, and they call back only through the callbacks (ops)
 * and userdata it gave their _new(). Each is freed by manager_free() before the
 * event loop:
 *   UdevBatch    (udev-batch.h)   udev's monitor and the queue of its events
 *   KernelQueue  (kernel-queue.h) the kernel's monitor and the queue of its adds
 *   PathWatch    (path-watch.h)   NVMe controllers and subsystems watched for paths
 *   BanKeeper    (bankeeper.h)    the irqbalance exchange and ban policy
 *   DriftCheck   (drift-check.h)  the drift timer, counters, last interrupt counts
 *   HeapTrimmer  (heap-trim.h)    the heap handed back after a burst
 *   Publisher    (publisher.h)    status.json, metrics, STATUS=, the watchdog
 *
 * The Manager's own files, each one job: manager.c (set-up, signals, start,
 * stop; the BanKeeper's callbacks), tuning.c (a disk's plan from hotplug to
 * removal), drift.c (one drift check over the plans; backoff.c the schedule),
 * hotplug.c (what udev's events and the path watch do to the plans),
 * kernel-event.c (a disk's queue rows at the kernel's add), reload.c
 * (configuration), conflict.c (drift, and who else writes), load.c (the load
 * samples), manager-publish.c (what the Publisher is given). */
typedef struct Manager {
        sd_event *event;
        sd_event_source *sigterm_source, *sigint_source, *sighup_source;
        Tuner tuner;                     /* root, paths, udev, topology, IRQs, rebound controllers */

        /* The components (see above); NULL before they are set up. */
        UdevBatch *udev;                 /* udev's events, queued and handed on in chunks */
        KernelQueue *kernel;             /* the kernel's own adds, queued (NULL: not heard) */
        PathWatch *paths;                /* multipath paths looked for after their controller's event */
        BanKeeper *bans;                 /* the irqbalance exchange and ban policy */
        DriftCheck *drift;               /* the drift check's timer, counters and last counts */
        HeapTrimmer *trimmer;            /* the heap trimmed once a burst's events stop */
        Publisher *publisher;            /* status.json, metrics, STATUS=, the watchdog */

        Config *config;
        unsigned reload_failures;
        Plan plan;                       /* one DevicePlan per tuned (or excluded) disk */
        /* Kernel name -> index in plan.devices + 1 (json-c's linkhash, the names
         * copied): a disk found without a scan of every plan at each of its events.
         * Exactly in step with plan.devices whenever it is not NULL; NULL (after
         * a reload, a controller's plans dropped, or no memory): found by a scan,
         * and built afresh at the next plan kept. Only the functions in tuning.c
         * that add, replace or drop a plan change plan.devices. */
        struct lh_table *plan_names;

        char **unrecorded;               /* disks not tuned: their originals could not be recorded */
        char **held;                     /* disks `iotunectl tune` holds (hold.h): left alone until released */
        char **hold_ignored;             /* disks whose hold file is not honoured (warned once) */
        /* Hot-added disks whose first tuning failed in a way a removal in progress
         * explains: reported by a drift check once PENDING_REPORT_USEC old, unless
         * the disk has gone by then (see manager_tune_device). */
        char **report_pending;
        uint64_t *report_pending_since;  /* CLOCK_MONOTONIC, one per name */
        bool in_batch;                   /* handling udev events (not start or reload) */
        const Plan *replaced;            /* during a reload: the plans being replaced, whose drift
                                          * history and holds the new ones take over */
        /* The udev event being handled for the disk being tuned ("add", "change"),
         * NULL otherwise: a knob found rewritten since iotuned's last write is drift. */
        const char *udev_action;
} Manager;

Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* root: NULL or "/" for the real system. config_dir: NULL for the standard search. */
int manager_new(const char *root, const char *config_dir, Manager **ret);

/* Load configuration (refusing to start if invalid), tune every present disk,
 * start watching udev and the drift timer, then READY=1. */
int manager_start(Manager *m);

int manager_run(Manager *m);

/* Exposed for tests: one drift check over every plan. */
int manager_check_drift(Manager *m);
