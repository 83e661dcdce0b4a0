/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>
#include <systemd/sd-event.h>

struct lh_table;

#include "bankeeper.h"
#include "config.h"
#include "drift-check.h"
#include "heap-trim.h"
#include "kernel-queue.h"
#include "path-watch.h"
#include "plan.h"
#include "publisher.h"
#include "tuner.h"
#include "udev-batch.h"

/* The daemon: one Manager owns the event loop, the udev monitor, the drift timer,
 * the signal sources, the configuration in force, the plan of every tuned disk
 * and their drift history. The pipeline is its Tuner's, as for iotunectl: every
 * change to the machine still goes through reconcile().
 *
 * Its files, each one job: manager.c (set-up, signals, start, stop), tuning.c
 * (a disk's plan from hotplug to removal), drift.c (the drift check and its
 * timer; backoff.c the schedule), hotplug.c (the udev monitor and its batches),
 * reload.c (configuration), bans.c (the irqbalance ban policy; irqset.c its set
 * arithmetic), publish.c (status.json, metrics, STATUS=). */
typedef struct Manager {
        sd_event *event;
        sd_event_source *sigterm_source, *sigint_source, *sighup_source;
        KernelQueue *kernel;             /* the kernel's own adds, queued (kernel-queue.c; NULL: not heard) */
        UdevBatch *udev;                 /* udev's events, queued and handled in chunks (udev-batch.c) */
        HeapTrimmer *trimmer;            /* the heap trimmed once a burst's events stop (heap-trim.c) */

        Tuner tuner;                     /* root, paths, udev, topology, IRQs, rebound controllers */
        /* NVMe controllers and subsystems whose hidden path disks are looked for again
         * for a while after their uevent, and the poll of the paths' controller
         * states (path-watch.c; NULL until udev is watched). */
        PathWatch *paths;

        Config *config;
        Plan plan;                       /* one DevicePlan per tuned (or excluded) disk */
        /* Kernel name -> index in plan.devices + 1 (json-c's linkhash, the names
         * copied): a disk found without a scan of every plan at each of its events.
         * Exactly in step with plan.devices whenever it is not NULL; NULL (after
         * a reload, a controller's plans dropped, or no memory): found by a scan,
         * and built afresh at the next plan kept. Only the functions in tuning.c
         * that add, replace or drop a plan change plan.devices. */
        struct lh_table *plan_names;

        Publisher *publisher;            /* status.json, metrics, STATUS=, the watchdog (publisher.c) */
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

        BanKeeper *bans;                 /* the irqbalance exchange and ban policy (bankeeper.c) */
        DriftCheck *drift;               /* the drift check's timer, counters and last counts (drift-check.c) */

        unsigned reload_failures;
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
