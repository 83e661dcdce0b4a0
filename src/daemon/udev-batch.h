/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "macro.h"

/* udev's events (monitor group "udev": its rules have run) of disks, NVMe
 * controllers and NVMe subsystems: add, change and remove queued as they come,
 * handed to the owner UDEV_CHUNK at a time once the loop is idle, a later event
 * of a device superseding an earlier one. Lost events (the socket overflowed)
 * are a rescan of every disk. Owned by the Manager, which tunes (ops). */
typedef struct UdevBatch UdevBatch;

/* Events handled per dispatch: between two chunks the loop drains the monitors'
 * sockets (a burst of hundreds of disks must not overflow them), and irqbalance,
 * status.json and STATUS= are brought up to date once the queue is empty. */
#define UDEV_CHUNK 64

typedef struct UdevBatchOps {
        /* A chunk begins, within its "udev batch" timing line. */
        void (*begin)(void *userdata);
        /* udev's events were lost: every disk is listed again. True when a plan
         * changed (what the burst changed before is forgotten: as it always was). */
        bool (*rescan)(void *userdata);
        /* One event, "add", "change" or "remove", of the device at `syspath`, no
         * later one of which is queued: true when a plan changed. */
        bool (*event)(void *userdata, const char *action, const char *syspath);
        /* The chunk is done. */
        void (*end)(void *userdata);
        /* The queue is empty: `handled` events since it last was, and whether a plan
         * changed in them. */
        void (*drained)(void *userdata, bool changed, size_t handled);
} UdevBatchOps;

/* Listening from now on. ops (borrowed, with userdata) must outlive the queue. */
int udev_batch_new(sd_event *event, struct udev *udev, const UdevBatchOps *ops, void *userdata, UdevBatch **ret);
UdevBatch *udev_batch_free(UdevBatch *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(UdevBatch *, udev_batch_free);

/* Whether a queued "add" of the device at `syspath` in the current burst
 * carries IOTUNED_PROFILE (a profile pinned by a udev rule). */
bool udev_batch_pinned(const UdevBatch *q, const char *syspath);
