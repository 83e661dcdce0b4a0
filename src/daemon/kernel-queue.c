/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's "add" events of block disks, queued and handed on in chunks
 * (kernel-event.c tunes them). A lost kernel event needs nothing: udev's follows
 * for every disk. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "kernel-queue.h"
#include "log.h"
#include "timing.h"
#include "util.h"

#define KERNEL_MONITOR_RCVBUF (128 * 1024 * 1024)

struct KernelQueue {
        const KernelQueueOps *ops;
        void *userdata;
        struct udev_monitor *monitor;
        sd_event_source *source;         /* io: the monitor's socket */
        sd_event_source *batch_source;   /* defer: hands on the queue */
        struct udev_device **pending;    /* disks the kernel added, as its events gave them, oldest first */
        size_t n_pending, pending_alloc;
        size_t handled;                  /* of the current burst */
};

KernelQueue *kernel_queue_free(KernelQueue *q) {
        if (!q)
                return NULL;
        sd_event_source_disable_unref(q->source);
        sd_event_source_disable_unref(q->batch_source);
        udev_monitor_unref(q->monitor);
        for (size_t i = 0; i < q->n_pending; i++)
                udev_device_unref(q->pending[i]);
        free(q->pending);
        free(q);
        return NULL;
}

static int on_kernel_batch(sd_event_source *s, void *userdata) {
        KernelQueue *q = userdata;
        size_t n = q->n_pending, k = MIN(n, (size_t) KERNEL_CHUNK);

        assert(q);

        timing_begin(0, "kernel add");
        q->ops->handle(q->userdata, q->pending, k);
        memmove(q->pending, q->pending + k, (n - k) * sizeof(struct udev_device *));
        q->n_pending -= k;
        q->handled += k;
        if (n == k) {
                free(q->pending);
                q->pending = NULL;
                q->pending_alloc = 0;
                if (q->ops->drained)
                        q->ops->drained(q->userdata, q->handled);
                q->handled = 0;
        } else
                /* Dispatched once (ONESHOT): the next chunk, after the loop has drained
                 * the sockets, whether or not another kernel event comes to ask. */
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        timing_end_log();
        return 0;
}

static int queue_add(KernelQueue *q, struct udev_device *u) {
        if (q->n_pending == q->pending_alloc) {
                size_t a = MAX(q->pending_alloc * 2, (size_t) KERNEL_CHUNK);
                struct udev_device **p = reallocarray(q->pending, a, sizeof(struct udev_device *));
                if (!p)
                        return -ENOMEM;
                q->pending = p;
                q->pending_alloc = a;
        }
        q->pending[q->n_pending++] = u;
        return 0;
}

static int on_kernel_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        KernelQueue *q = userdata;
        struct udev_device *u;

        assert(q);

        while ((u = udev_monitor_receive_device(q->monitor))) {
                const char *action = udev_device_get_action(u), *devtype = udev_device_get_devtype(u),
                           *sub = udev_device_get_subsystem(u), *name = udev_device_get_sysname(u);

                if (action && streq(action, "add") && sub && streq(sub, "block") && devtype && streq(devtype, "disk") &&
                    name && *name) {
                        if (queue_add(q, u) >= 0)
                                u = NULL;
                        else
                                log_oom();
                }
                udev_device_unref(u);
        }
        /* A lost kernel event needs nothing: udev's follows for every disk. */
        if (q->n_pending > 0)
                (void) sd_event_source_set_enabled(q->batch_source, SD_EVENT_ONESHOT);
        return 0;
}

int kernel_queue_new(sd_event *event, struct udev *udev, const KernelQueueOps *ops, void *userdata,
                     KernelQueue **ret) {
        _cleanup_(kernel_queue_freep) KernelQueue *q = NULL;
        int r;

        assert(event);
        assert(udev);
        assert(ops);
        assert(ops->handle);
        assert(ret);

        q = calloc(1, sizeof(KernelQueue));
        if (!q)
                return -ENOMEM;
        q->ops = ops;
        q->userdata = userdata;
        q->monitor = udev_monitor_new_from_netlink(udev, "kernel");
        if (!q->monitor)
                return -ENOMEM;
        r = udev_monitor_filter_add_match_subsystem_devtype(q->monitor, "block", "disk");
        if (r < 0)
                return r;
        if (udev_monitor_set_receive_buffer_size(q->monitor, KERNEL_MONITOR_RCVBUF) < 0) {
                int size = KERNEL_MONITOR_RCVBUF;
                if (setsockopt(udev_monitor_get_fd(q->monitor), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
                        log_debug_errno(errno, "Cannot enlarge the kernel monitor's receive buffer: %m");
        }
        r = udev_monitor_enable_receiving(q->monitor);
        if (r < 0)
                return r;
        r = sd_event_add_io(event, &q->source, udev_monitor_get_fd(q->monitor), EPOLLIN, on_kernel_event, q);
        if (r < 0)
                return r;
        /* Draining a socket is cheap and comes first (udev's monitor has the same
         * priority); then the kernel's adds, before udev's batch: the kernel's
         * event is the older. */
        (void) sd_event_source_set_priority(q->source, SD_EVENT_PRIORITY_IMPORTANT);
        (void) sd_event_source_set_description(q->source, "kernel-monitor");
        r = sd_event_add_defer(event, &q->batch_source, on_kernel_batch, q);
        if (r < 0)
                return r;
        (void) sd_event_source_set_priority(q->batch_source, SD_EVENT_PRIORITY_IMPORTANT / 2);
        (void) sd_event_source_set_description(q->batch_source, "kernel-batch");
        r = sd_event_source_set_enabled(q->batch_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}
