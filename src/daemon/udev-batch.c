/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* udev's events of disks, NVMe controllers and NVMe subsystems, queued as they
 * come and handed on in chunks once the loop is idle (hotplug.c handles them). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "log.h"
#include "timing.h"
#include "udev-batch.h"
#include "util.h"

/* udev may queue a burst (hundreds of disks at boot, a JBOF hot-add): a large
 * receive buffer keeps the kernel from dropping events while we work. */
#define MONITOR_RCVBUF (128 * 1024 * 1024)

struct UdevBatch {
        const UdevBatchOps *ops;
        void *userdata;
        struct udev_monitor *monitor;
        sd_event_source *monitor_source;
        sd_event_source *batch_source;   /* defer: hands on the queued events */
        char **pending;                  /* queued "ACTION SYSPATH" from udev, oldest first */
        bool rescan_pending;             /* udev events were lost: list every disk again */
        size_t batch_handled;            /* events of the current burst handled so far */
        bool batch_changed;              /* a plan changed in the burst: status to write at its end */
        char **pinned;                   /* syspaths whose queued "add" carries IOTUNED_PROFILE */
};

UdevBatch *udev_batch_free(UdevBatch *q) {
        if (!q)
                return NULL;
        sd_event_source_disable_unref(q->monitor_source);
        sd_event_source_disable_unref(q->batch_source);
        udev_monitor_unref(q->monitor);
        strv_free(q->pending);
        strv_free(q->pinned);
        free(q);
        return NULL;
}

bool udev_batch_pinned(const UdevBatch *q, const char *syspath) {
        assert(q);
        assert(syspath);

        return strv_contains(q->pinned, syspath);
}

static int on_batch(sd_event_source *s, void *userdata) {
        UdevBatch *q = userdata;
        size_t n = strv_length(q->pending), k = MIN(n, (size_t) UDEV_CHUNK);
        _cleanup_strv_free_ char **batch = calloc(k + 1, sizeof(char *));
        bool changed = q->batch_changed;

        assert(q);

        if (!batch)
                return log_oom();
        memcpy(batch, q->pending, k * sizeof(char *));
        if (n > k)
                memmove(q->pending, q->pending + k, (n - k + 1) * sizeof(char *)); /* with the NULL */
        else {
                free(q->pending); /* its entries are the chunk's now */
                q->pending = NULL;
        }
        q->batch_handled += k;
        (void) sd_event_source_set_enabled(q->batch_source, q->pending ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        timing_begin(0, "udev batch");
        q->ops->begin(q->userdata);
        if (q->rescan_pending) {
                q->rescan_pending = false;
                /* Added to what earlier chunks of the burst changed, not in place of it. */
                changed = q->ops->rescan(q->userdata) || changed;
        }
        for (char **e = batch; e && *e; e++) {
                char *syspath = strchr(*e, ' ') + 1;
                const char *action = *e;

                syspath[-1] = 0;
                /* A later event for the same device (this chunk, or one still queued)
                 * supersedes this one. */
                bool superseded = false;
                for (char **l = e + 1; *l && !superseded; l++)
                        superseded = streq(strchr(*l, ' ') + 1, syspath);
                for (char **l = q->pending; l && *l && !superseded; l++)
                        superseded = streq(strchr(*l, ' ') + 1, syspath);
                if (superseded)
                        continue;
                changed = q->ops->event(q->userdata, action, syspath) || changed;
        }
        q->ops->end(q->userdata);
        if (q->pending) {
                q->batch_changed = changed;
                timing_end_log();
                return 0;
        }
        q->ops->drained(q->userdata, changed, q->batch_handled);
        q->pinned = strv_free(q->pinned);
        q->batch_changed = false;
        q->batch_handled = 0;
        timing_end_log();
        return 0;
}

static int on_monitor(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UdevBatch *q = userdata;
        struct udev_device *u;

        assert(q);

        /* Drain everything that is queued; the batch runs once the loop is idle. */
        while ((u = udev_monitor_receive_device(q->monitor))) {
                const char *action = udev_device_get_action(u), *devtype = udev_device_get_devtype(u);
                char *entry = NULL;

                const char *sub = udev_device_get_subsystem(u);
                bool wanted = (devtype && streq(devtype, "disk")) ||
                              (sub && (streq(sub, "nvme") || streq(sub, "nvme-subsystem")));

                /* A profile pinned by a udev rule: the disk is planned afresh at its
                 * "add", not only verified (manager_verify_early). */
                if (action && wanted && streq(action, "add") && udev_device_get_property_value(u, "IOTUNED_PROFILE") &&
                    strv_extend(&q->pinned, udev_device_get_syspath(u)) < 0)
                        log_oom();
                if (action && wanted && (streq(action, "add") || streq(action, "change") || streq(action, "remove")) &&
                    asprintf_safe(&entry, "%s %s", action, udev_device_get_syspath(u)) >= 0 &&
                    strv_push(&q->pending, entry) < 0)
                        log_oom();
                udev_device_unref(u);
        }
        if (errno == ENOBUFS) {
                /* The kernel dropped messages: the receive buffer overflowed in a burst. */
                log_warning("udev events were lost (the monitor's receive buffer overflowed); listing every disk "
                            "again.");
                q->rescan_pending = true;
        }
        if (q->pending || q->rescan_pending)
                (void) sd_event_source_set_enabled(q->batch_source, SD_EVENT_ONESHOT);
        return 0;
}

int udev_batch_new(sd_event *event, struct udev *udev, const UdevBatchOps *ops, void *userdata, UdevBatch **ret) {
        _cleanup_(udev_batch_freep) UdevBatch *q = NULL;
        int r;

        assert(event);
        assert(udev);
        assert(ops);
        assert(ops->begin && ops->rescan && ops->event && ops->end && ops->drained);
        assert(ret);

        q = calloc(1, sizeof(UdevBatch));
        if (!q)
                return -ENOMEM;
        q->ops = ops;
        q->userdata = userdata;
        /* "udev", not "kernel": udev rules have run when we see the event, so our
         * values are written after theirs. */
        q->monitor = udev_monitor_new_from_netlink(udev, "udev");
        if (!q->monitor)
                return -ENOMEM;
        r = udev_monitor_filter_add_match_subsystem_devtype(q->monitor, "block", "disk");
        if (r < 0)
                return r;
        /* NVMe controllers and subsystems: the only announcements of hidden
         * multipath paths (see hotplug.c). */
        r = udev_monitor_filter_add_match_subsystem_devtype(q->monitor, "nvme", NULL);
        if (r < 0)
                return r;
        r = udev_monitor_filter_add_match_subsystem_devtype(q->monitor, "nvme-subsystem", NULL);
        if (r < 0)
                return r;
        /* libudev uses SO_RCVBUFFORCE, which needs CAP_NET_ADMIN; the unit keeps only
         * CAP_SYS_ADMIN, so fall back to SO_RCVBUF, which the kernel caps at
         * net.core.rmem_max. Bursts are drained as fast as they arrive either way. */
        if (udev_monitor_set_receive_buffer_size(q->monitor, MONITOR_RCVBUF) < 0) {
                int size = MONITOR_RCVBUF;
                if (setsockopt(udev_monitor_get_fd(q->monitor), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
                        log_debug_errno(errno, "Cannot enlarge the udev monitor's receive buffer: %m");
        }
        r = udev_monitor_enable_receiving(q->monitor);
        if (r < 0)
                return r;
        r = sd_event_add_io(event, &q->monitor_source, udev_monitor_get_fd(q->monitor), EPOLLIN, on_monitor, q);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(q->monitor_source, "udev-monitor");
        /* Drained before any handling (see kernel-queue.c): a socket left full drops events. */
        (void) sd_event_source_set_priority(q->monitor_source, SD_EVENT_PRIORITY_IMPORTANT);
        r = sd_event_add_defer(event, &q->batch_source, on_batch, q);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(q->batch_source, "udev-batch");
        r = sd_event_source_set_enabled(q->batch_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}
