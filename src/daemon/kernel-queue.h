/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <libudev.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "macro.h"

/* The kernel's own uevents (monitor group "kernel", heard before udev's): every
 * "add" of a block disk is queued as the event gave it, and the queue handed to
 * the owner KERNEL_CHUNK at a time, between two chunks the loop draining the
 * monitors' sockets. Owned by the Manager, which tunes the disks (ops). */
typedef struct KernelQueue KernelQueue;

/* The queued adds, KERNEL_CHUNK at a time: a burst of hundreds of disks does not
 * overflow udev's socket while the kernel's are handled. */
#define KERNEL_CHUNK 16

typedef struct KernelQueueOps {
        /* A chunk of adds, oldest first, within one "kernel add" timing line: each
         * devices[i] is the handler's, to unref (setting it NULL). */
        void (*handle)(void *userdata, struct udev_device **devices, size_t n);
        /* The queue is empty after `handled` adds since it last was (optional). */
        void (*drained)(void *userdata, size_t handled);
} KernelQueueOps;

/* Listening from now on; a failure leaves nothing behind (udev's events still
 * come for every disk). ops (borrowed, with userdata) must outlive the queue. */
int kernel_queue_new(sd_event *event, struct udev *udev, const KernelQueueOps *ops, void *userdata,
                     KernelQueue **ret);
KernelQueue *kernel_queue_free(KernelQueue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(KernelQueue *, kernel_queue_free);
