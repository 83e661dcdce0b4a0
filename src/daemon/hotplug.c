/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hotplug: the udev monitor ("udev", after the rules ran) queues add, change and
 * remove events of disks; once the loop is idle the queued batch is handled,
 * a later event of a disk superseding an earlier one. */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "manager-internal.h"
#include "util.h"

/* udev may queue a burst (hundreds of disks at boot, a JBOF hot-add): a large
 * receive buffer keeps the kernel from dropping events while we work. */
#define MONITOR_RCVBUF (128 * 1024 * 1024)

static int on_batch(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        _cleanup_strv_free_ char **batch = TAKE_PTR(m->pending);
        DiscoveryFilter f = tuner_discovery_filter(m->config);
        bool changed = false;

        assert(m);

        (void) sd_event_source_set_enabled(m->batch_source, SD_EVENT_OFF);
        tuner_refresh_irqs(&m->tuner);
        m->in_batch = true;
        for (char **e = batch; e && *e; e++) {
                char *syspath = strchr(*e, ' ') + 1;
                const char *action = *e, *name;
                struct udev_device *u;
                Device *d = NULL;
                int r;

                syspath[-1] = 0;
                /* A later event for the same device in this batch supersedes this one. */
                bool superseded = false;
                for (char **l = e + 1; *l && !superseded; l++)
                        superseded = streq(strchr(*l, ' ') + 1, syspath);
                if (superseded)
                        continue;

                name = strrchr(syspath, '/') + 1;
                if (streq(action, "remove")) {
                        manager_forget_device(m, name);
                        changed = true;
                        continue;
                }
                if (!device_name_wanted(name, &f))
                        continue;
                u = udev_device_new_from_syspath(m->tuner.udev, syspath);
                if (!u)
                        continue; /* gone again already */
                r = device_probe(u, &d);
                udev_device_unref(u);
                if (r == -ENODEV)
                        continue;
                if (r >= 0)
                        r = manager_tune_device(m, d);
                if (r < 0 && access(syspath, F_OK) < 0 && errno == ENOENT)
                        log_debug_errno(r, "Cannot tune %s, which was removed meanwhile: %m", name);
                else if (r < 0)
                        log_error_errno(r, "Cannot tune %s: %m", name);
                changed = true;
        }
        m->in_batch = false;
        manager_sync_irqbalance(m, false);
        if (changed) {
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
        return 0;
}

static int on_monitor(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        struct udev_device *u;

        assert(m);

        /* Drain everything that is queued; the batch runs once the loop is idle. */
        while ((u = udev_monitor_receive_device(m->monitor))) {
                const char *action = udev_device_get_action(u), *devtype = udev_device_get_devtype(u);
                char *entry = NULL;

                if (action && devtype && streq(devtype, "disk") &&
                    (streq(action, "add") || streq(action, "change") || streq(action, "remove")) &&
                    asprintf_safe(&entry, "%s %s", action, udev_device_get_syspath(u)) >= 0 &&
                    strv_push(&m->pending, entry) < 0)
                        log_oom();
                udev_device_unref(u);
        }
        if (m->pending)
                (void) sd_event_source_set_enabled(m->batch_source, SD_EVENT_ONESHOT);
        return 0;
}

int manager_watch_udev(Manager *m) {
        int r;

        assert(m);

        /* "udev", not "kernel": udev rules have run when we see the event, so our
         * values are written after theirs. */
        m->monitor = udev_monitor_new_from_netlink(m->tuner.udev, "udev");
        if (!m->monitor)
                return -ENOMEM;
        r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, "block", "disk");
        if (r < 0)
                return r;
        /* libudev uses SO_RCVBUFFORCE, which needs CAP_NET_ADMIN; the unit keeps only
         * CAP_SYS_ADMIN, so fall back to SO_RCVBUF, which the kernel caps at
         * net.core.rmem_max. Bursts are drained as fast as they arrive either way. */
        if (udev_monitor_set_receive_buffer_size(m->monitor, MONITOR_RCVBUF) < 0) {
                int size = MONITOR_RCVBUF;
                if (setsockopt(udev_monitor_get_fd(m->monitor), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
                        log_debug_errno(errno, "Cannot enlarge the udev monitor's receive buffer: %m");
        }
        r = udev_monitor_enable_receiving(m->monitor);
        if (r < 0)
                return r;
        r = sd_event_add_io(m->event, &m->monitor_source, udev_monitor_get_fd(m->monitor), EPOLLIN, on_monitor, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->monitor_source, "udev-monitor");
        r = sd_event_add_defer(m->event, &m->batch_source, on_batch, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->batch_source, "udev-batch");
        return sd_event_source_set_enabled(m->batch_source, SD_EVENT_OFF);
}

