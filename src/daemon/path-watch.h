/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <assert.h>
#include <stdbool.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "backoff.h"
#include "macro.h"
#include "util.h"

/* The multipath path watch: NVMe controllers and subsystems whose hidden path
 * disks are looked for again for a while after their uevent (the namespace scan
 * that creates them runs after the "connected" event), and, while a path is
 * planned, a poll of the paths' controller states. One timer for both. Owned by
 * the Manager, which lists and tunes the paths (ops). */
typedef struct PathWatch PathWatch;

/* After a controller's or subsystem's uevent, its hidden path disks are looked
 * for every PATH_WATCH_FAST_USEC for PATH_WATCH_FAST_FOR_USEC, then every
 * PATH_WATCH_SLOW_USEC until PATH_WATCH_FOR_USEC: the namespace scan that adds
 * them runs from a work queue after NVME_EVENT=connected
 * (drivers/nvme/host/core.c nvme_start_ctrl -> nvme_queue_scan). */
#define PATH_WATCH_FAST_USEC (50ULL * 1000ULL)
#define PATH_WATCH_FAST_FOR_USEC (5 * USEC_PER_SEC)
#define PATH_WATCH_SLOW_USEC (1 * USEC_PER_SEC)
#define PATH_WATCH_FOR_USEC (15 * USEC_PER_SEC)
/* A path lost to its fabric (controller resetting or connecting) sends nothing
 * until it is live again: the controller states of the planned paths are read
 * this often, for the journal and status.json. */
#define PATH_STATE_POLL_USEC (5 * USEC_PER_SEC)

typedef struct PathWatchOps {
        /* Before the watched controllers and subsystems are listed again. */
        void (*begin)(void *userdata);
        /* List the path disks below `syspath` and tune the new or replaced ones:
         * true when a plan changed. */
        bool (*rescan)(void *userdata, const char *syspath);
        /* After them (changed: a rescan changed a plan): the paths' controller
         * states read again, and what changed published. */
        void (*end)(void *userdata, bool changed);
        /* Whether a multipath path is planned (its controller's state is polled). */
        bool (*paths_planned)(void *userdata);
} PathWatchOps;

/* ops (borrowed, with userdata) must outlive the watch. */
int path_watch_new(sd_event *event, const PathWatchOps *ops, void *userdata, PathWatch **ret);
PathWatch *path_watch_free(PathWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(PathWatch *, path_watch_free);

/* The timer, first in PATH_STATE_POLL_USEC: paths tuned at start have their
 * states polled from the first check on. */
int path_watch_start(PathWatch *w);
/* Keep listing the paths below `syspath` for PATH_WATCH_FOR_USEC from now. */
void path_watch_add(PathWatch *w, const char *syspath);
/* A path was planned (a reload, a rescan): its state is polled, unless the timer
 * is armed already. */
void path_watch_arm_poll(PathWatch *w);

/* "nvme1" (a controller), "nvme-subsys1" (a subsystem), or neither. */
static inline bool nvme_name_is_ctrl(const char *name) {
        assert(name);

        if (!str_startswith(name, "nvme"))
                return false;
        size_t n = strspn(name + 4, "0123456789");
        return n > 0 && name[4 + n] == 0;
}

static inline bool nvme_name_is_subsys(const char *name) {
        assert(name);

        if (!str_startswith(name, "nvme-subsys"))
                return false;
        size_t n = strspn(name + 11, "0123456789");
        return n > 0 && name[11 + n] == 0;
}
