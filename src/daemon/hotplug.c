/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hotplug: udev's add, change and remove events of disks, NVMe controllers and
 * NVMe subsystems, as the Manager's UdevBatch (udev-batch.c: the monitor, after
 * the rules ran) hands them on once the loop is idle, a later event of a device
 * superseding an earlier one.
 *
 * NVMe native multipath: the tunable queues are the hidden path disks
 * (nvmeXcYnZ), which send no uevent at all (GENHD_FL_HIDDEN: block/genhd.c
 * device_add_disk leaves their uevents suppressed). What is heard is the head
 * (nvmeXnY, its first path only), the subsystem, and each controller: "add",
 * then "change" with NVME_EVENT=connected once it is live, on every
 * (re)connect (drivers/nvme/host/core.c nvme_start_ctrl), and "remove" when it
 * is deleted (nvme disconnect, ctrl_loss_tmo). So on those events the paths
 * are listed from sysfs (nvme_path_disks()): new ones, and every path of a
 * controller that (re)connected, are tuned; paths that vanished are reported
 * lost, which is not a failure. The namespace scan that creates the paths runs
 * from a work queue after "connected", so the controller or subsystem is
 * watched (listed again) for a while after its event: the Manager's PathWatch
 * (path-watch.c) times that, and asks here for the listing. */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "manager-internal.h"
#include "util.h"

/* Is the planned path still the disk we tuned? A path disk of the same name may
 * have been deleted and added again between two looks: its diskseq differs. */
static bool path_unchanged(const Device *d) {
        _cleanup_free_ char *seq = NULL;

        assert(d);

        if (read_attr_at(d->syspath, "diskseq", &seq) < 0)
                return !d->diskseq && access(d->syspath, F_OK) == 0;
        return d->diskseq && streq(strstrip(seq), d->diskseq);
}

/* Tune one path disk found by listing (it sent no uevent). 1 when tuned, 0 when it
 * was gone again, -errno. */
static int tune_path(Manager *m, const char *name) {
        char *names[] = { (char *) name, NULL };
        DeviceList l = {};
        const char *bad = NULL;
        Device *d;
        int r;

        assert(m);
        assert(name);

        r = tuner_lookup(&m->tuner, names, &l, &bad);
        if (r == -ENODEV || r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        d = TAKE_PTR(l.items[0]);
        device_list_done(&l);
        log_debug("%s: NVMe multipath path found (controller %s, state %s); tuning it.", name,
                  d->nvme ? d->nvme->name : "?", d->nvme && d->nvme->state ? d->nvme->state : "?");
        r = manager_tune_device(m, d);
        manager_arm_path_poll(m);
        return r < 0 ? r : 1;
}

/* Planned paths that are gone: each is reported lost, once. */
static bool forget_lost_paths(Manager *m, const char *why) {
        bool changed = false;

        assert(m);
        assert(why);

        for (size_t i = 0; i < m->plan.n;) {
                const Device *d = m->plan.devices[i]->device;
                if (d->multipath_head_name && access(d->syspath, F_OK) < 0 && errno == ENOENT) {
                        _cleanup_free_ char *name = strdup(d->name);
                        if (!name) {
                                log_oom();
                                return changed;
                        }
                        manager_forget_path(m, name, why);
                        changed = true;
                        continue; /* the next plan moved to i */
                }
                i++;
        }
        return changed;
}

/* List the path disks below a controller or subsystem and tune those not planned
 * yet, or replaced since (a new diskseq), or every one when `all` (a controller
 * that connected again: its queues were set up anew). True when a plan changed. */
static bool rescan_paths(Manager *m, const char *syspath, bool all) {
        _cleanup_strv_free_ char **paths = NULL;
        bool changed = false;
        int r;

        assert(m);
        assert(syspath);

        r = nvme_path_disks(syspath, &paths);
        if (r < 0 && r != -ENOENT)
                log_debug_errno(r, "Cannot list the NVMe paths below %s: %m", syspath);
        for (char **p = paths; p && *p; p++) {
                ssize_t idx = manager_plan_index(m, *p);
                if (idx >= 0 && !all && path_unchanged(m->plan.devices[idx]->device))
                        continue;
                r = tune_path(m, *p);
                if (r < 0)
                        log_error_errno(r, "Cannot tune the NVMe path %s: %m", *p);
                changed = changed || r != 0;
        }
        return forget_lost_paths(m, "its disk is gone") || changed;
}

/* Read the controller state of every planned path again; a path whose controller
 * is no longer live is lost for now (reported at info: the fabric reconnects it,
 * and its "connected" event has it tuned again). True when a state changed. */
static bool refresh_path_states(Manager *m) {
        bool changed = false;

        assert(m);

        for (size_t i = 0; i < m->plan.n; i++) {
                DevicePlan *p = m->plan.devices[i];
                NvmeCtrl *c = p->device->nvme;
                _cleanup_free_ char *state = NULL;

                if (!p->device->multipath_head_name || !c || !c->syspath ||
                    read_attr_at(c->syspath, "state", &state) < 0)
                        continue;
                strstrip(state);
                if (streq_ptr(c->state, state))
                        continue;
                if (!streq(state, "live"))
                        log_info("%s: multipath path lost for now (controller %s %s); tuned again when it reconnects.",
                                 p->device->name, c->name, state);
                else
                        log_info("%s: multipath path back (controller %s live).", p->device->name, c->name);
                free(c->state);
                c->state = TAKE_PTR(state);
                changed = true;
        }
        return changed;
}

/* The path watch (path-watch.c) lists a watched controller or subsystem again:
 * as for udev's events, a path removed meanwhile is not a failure. */
static void on_path_watch_begin(void *userdata) {
        Manager *m = userdata;

        assert(m);

        tuner_refresh_irqs(&m->tuner);
        m->in_batch = true;
}

static bool on_path_watch_rescan(void *userdata, const char *syspath) {
        return rescan_paths(userdata, syspath, false);
}

static void on_path_watch_end(void *userdata, bool changed) {
        Manager *m = userdata;

        assert(m);

        m->in_batch = false;
        changed = refresh_path_states(m) || changed;
        if (changed) {
                manager_sync_irqbalance(m);
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
}

static bool paths_planned(void *userdata) {
        Manager *m = userdata;

        assert(m);

        for (size_t i = 0; i < m->plan.n; i++)
                if (m->plan.devices[i]->device->multipath_head_name)
                        return true;
        return false;
}

static const PathWatchOps path_watch_ops = {
        .begin = on_path_watch_begin,
        .rescan = on_path_watch_rescan,
        .end = on_path_watch_end,
        .paths_planned = paths_planned,
};

void manager_arm_path_poll(Manager *m) {
        assert(m);

        if (m->paths)
                path_watch_arm_poll(m->paths);
}

/* An event of an NVMe controller or subsystem (`name` is the last part of its
 * syspath). True when a plan changed. */
static bool on_nvme_event(Manager *m, const char *action, const char *syspath, const char *name) {
        bool changed;

        assert(m);
        assert(action);
        assert(syspath);
        assert(name);

        if (streq(action, "remove")) {
                /* A deleted controller takes its path disks with it, silently. */
                _cleanup_free_ char *why = NULL;
                if (asprintf_safe(&why, "%s %s removed", nvme_name_is_ctrl(name) ? "controller" : "subsystem", name) < 0)
                        return log_oom(), false;
                return forget_lost_paths(m, why);
        }
        /* "change" of a controller: NVME_EVENT=connected (a (re)connect, with its
         * queues set up anew), rediscover, or an AEN; re-tune every path of it. */
        changed = rescan_paths(m, syspath, streq(action, "change") && nvme_name_is_ctrl(name));
        path_watch_add(m->paths, syspath);
        return changed;
}

/* udev's events were lost (its socket overflowed): every disk is listed again;
 * new or replaced ones are tuned, vanished ones forgotten. True when a plan
 * changed. */
static bool rescan(Manager *m) {
        DeviceList l = {};
        bool changed = false;
        int r;

        r = tuner_enumerate(&m->tuner, m->config, &l);
        if (r < 0) {
                log_error_errno(r, "Cannot list the disks again: %m");
                return false;
        }
        for (size_t i = 0; i < m->plan.n;) {
                Device *d = m->plan.devices[i]->device;
                if (!d->multipath_head_name && device_vanished(d)) {
                        _cleanup_free_ char *name = strdup(d->name);
                        if (!name)
                                break;
                        manager_forget_device(m, name);
                        changed = true;
                        continue;
                }
                i++;
        }
        for (size_t i = 0; i < l.n; i++) {
                Device *d = TAKE_PTR(l.items[i]);
                ssize_t idx = manager_plan_index(m, d->name);
                if (idx >= 0 && manager_same_disk(m->plan.devices[idx]->device, d)) {
                        device_free(d);
                        continue;
                }
                _cleanup_free_ char *name = strdup(d->name);
                r = manager_tune_device(m, d);
                if (r < 0)
                        log_error_errno(r, "Cannot tune %s: %m", name ?: "?");
                changed = true;
                manager_keepalive(m);
        }
        device_list_done(&l);
        return changed;
}

/* A chunk of udev's events begins (udev-batch.c). */
static void on_udev_begin(void *userdata) {
        Manager *m = userdata;

        assert(m);

        tuner_refresh_irqs(&m->tuner);
        m->in_batch = true;
}

static bool on_udev_rescan(void *userdata) {
        return rescan(userdata);
}

/* One udev event of a disk, an NVMe controller or an NVMe subsystem. True when a
 * plan changed. */
static bool on_udev_event(void *userdata, const char *action, const char *syspath) {
        Manager *m = userdata;
        DiscoveryFilter f = tuner_discovery_filter(m->config);
        const char *name = strrchr(syspath, '/') + 1;
        Device *d = NULL;
        int r;

        assert(m);

        if (nvme_name_is_ctrl(name) || nvme_name_is_subsys(name))
                return on_nvme_event(m, action, syspath, name);
        if (streq(action, "remove")) {
                ssize_t idx = manager_plan_index(m, name);
                /* A disk tuned at the kernel's event whose queue is there now is a
                 * new one under the old name: this "remove" is the old disk's. */
                if (idx >= 0 && m->plan.devices[idx]->early_usec && !device_vanished(m->plan.devices[idx]->device))
                        return false;
                manager_forget_device(m, name);
                return true;
        }
        if (!device_name_wanted(name, &f))
                return false;
        ssize_t idx = streq(action, "add") ? manager_plan_index(m, name) : -1;
        if (idx >= 0) {
                r = manager_verify_early(m, idx);
                if (r == -ENOMEM)
                        log_oom();
                if (r != 0)
                        return true;
        }
        r = tuner_probe(&m->tuner, syspath, &d);
        if (r == -ENODEV)
                return false; /* gone again already, or not a disk to tune */
        if (r >= 0 && d->multipath_head && !streq(action, "remove")) {
                /* A head is announced when its first path goes live; that path,
                 * and any other already there, sent nothing: list them below the
                 * subsystem (the head's parent). */
                _cleanup_free_ char *subsys = strndup(syspath, name - 1 - syspath);
                if (subsys) {
                        path_watch_add(m->paths, subsys);
                        (void) rescan_paths(m, subsys, false); /* a change: so is the head's own */
                }
        }
        if (r >= 0) {
                /* A udev rule that runs on "change" rewrote knobs just before (tuning.c) */
                m->udev_action = action;
                r = manager_tune_device(m, d);
                m->udev_action = NULL;
        }
        manager_keepalive(m);
        if (r < 0 && access(syspath, F_OK) < 0 && errno == ENOENT)
                log_debug_errno(r, "Cannot tune %s, which was removed meanwhile: %m", name);
        else if (r < 0)
                log_error_errno(r, "Cannot tune %s: %m", name);
        return true;
}

static void on_udev_end(void *userdata) {
        Manager *m = userdata;

        assert(m);

        m->in_batch = false;
}

/* The queue is empty: irqbalance, status.json and STATUS= brought up to date. */
static void on_udev_drained(void *userdata, bool changed, size_t handled) {
        Manager *m = userdata;

        assert(m);

        manager_sync_irqbalance(m);
        if (changed) {
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
        heap_trimmer_later(m->trimmer, handled);
}

static const UdevBatchOps udev_batch_ops = {
        .begin = on_udev_begin,
        .rescan = on_udev_rescan,
        .event = on_udev_event,
        .end = on_udev_end,
        .drained = on_udev_drained,
};

int manager_watch_udev(Manager *m) {
        int r;

        assert(m);

        r = udev_batch_new(m->event, m->tuner.udev, &udev_batch_ops, m, &m->udev);
        if (r < 0)
                return r;
        /* Paths tuned at start: their states are polled from the first check on. */
        r = path_watch_new(m->event, &path_watch_ops, m, &m->paths);
        if (r < 0)
                return r;
        return path_watch_start(m->paths);
}
