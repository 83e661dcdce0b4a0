/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NVMe native multipath: the hidden path disks send no uevent, and the namespace
 * scan that creates them runs from a work queue after their controller's
 * "connected" event. So a controller or subsystem is watched (its paths listed
 * again, by the owner) for a while after its event, until it is gone or has
 * plain disks only; and while a path is planned, its controller's state is
 * polled. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "path-watch.h"

struct PathWatch {
        sd_event *event;
        const PathWatchOps *ops;
        void *userdata;
        /* The watched controllers and subsystems: syspaths, and when each was last
         * announced (CLOCK_MONOTONIC). */
        char **syspaths;
        uint64_t *since;
        sd_event_source *source;
};

int path_watch_new(sd_event *event, const PathWatchOps *ops, void *userdata, PathWatch **ret) {
        PathWatch *w;

        assert(event);
        assert(ops);
        assert(ops->begin && ops->rescan && ops->end && ops->paths_planned);
        assert(ret);

        w = calloc(1, sizeof(PathWatch));
        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->ops = ops;
        w->userdata = userdata;
        *ret = w;
        return 0;
}

PathWatch *path_watch_free(PathWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        sd_event_unref(w->event);
        strv_free(w->syspaths);
        free(w->since);
        free(w);
        return NULL;
}

/* A controller whose namespaces are plain disks (nvmeXnY right below it) is not
 * part of a multipath subsystem: its disks announce themselves, nothing to watch
 * for. */
static bool ctrl_has_plain_disk(const char *syspath) {
        struct dirent *de;
        bool found = false;
        DIR *d;

        assert(syspath);

        if (!nvme_name_is_ctrl(strrchr(syspath, '/') ? strrchr(syspath, '/') + 1 : syspath))
                return false;
        d = opendir(syspath);
        if (!d)
                return false;
        while (!found && (de = readdir(d))) {
                size_t a, b;
                if (!str_startswith(de->d_name, "nvme"))
                        continue;
                a = strspn(de->d_name + 4, "0123456789");
                if (a == 0 || de->d_name[4 + a] != 'n')
                        continue;
                b = strspn(de->d_name + 5 + a, "0123456789");
                found = b > 0 && de->d_name[5 + a + b] == 0;
        }
        closedir(d);
        return found;
}

/* Why there is nothing (more) to wait for below a watched controller or
 * subsystem, or NULL: it is gone, or it has (every controller of the subsystem
 * has) a plain disk, a namespace without native multipath, which has no hidden
 * paths. Without this, every hot-added plain controller's subsystem was polled
 * for PATH_WATCH_FOR_USEC, ~110 wake-ups for nothing. */
static const char *watch_done(const char *syspath) {
        const char *name = strrchr(syspath, '/') ? strrchr(syspath, '/') + 1 : syspath;
        struct dirent *de;
        size_t ctrls = 0, plain = 0;
        DIR *d;

        if (access(syspath, F_OK) < 0 && errno == ENOENT)
                return "it is gone";
        if (nvme_name_is_ctrl(name))
                return ctrl_has_plain_disk(syspath) ? "its disk is a plain one, no paths" : NULL;
        d = opendir(syspath);
        if (!d)
                return NULL;
        /* A subsystem links each of its controllers by name. */
        while ((de = readdir(d))) {
                _cleanup_free_ char *c = NULL;
                if (!nvme_name_is_ctrl(de->d_name))
                        continue;
                ctrls++;
                c = path_join(syspath, de->d_name);
                if (c && ctrl_has_plain_disk(c))
                        plain++;
        }
        closedir(d);
        return ctrls > 0 && plain == ctrls ? "every controller's disks are plain ones, no paths" : NULL;
}

static int on_path_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        PathWatch *w = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC), next = UINT64_MAX;
        bool changed = false;
        size_t j = 0;

        assert(w);

        w->ops->begin(w->userdata);
        for (size_t i = 0; w->syspaths && w->syspaths[i]; i++) {
                uint64_t age = now - w->since[i];
                const char *done = age >= PATH_WATCH_FOR_USEC ? "time is up" : watch_done(w->syspaths[i]);
                if (done) {
                        log_debug("Path watch of %s ends: %s.", w->syspaths[i], done);
                        free(w->syspaths[i]);
                        continue;
                }
                changed = w->ops->rescan(w->userdata, w->syspaths[i]) || changed;
                next = MIN(next, age < PATH_WATCH_FAST_FOR_USEC ? PATH_WATCH_FAST_USEC : PATH_WATCH_SLOW_USEC);
                w->since[j] = w->since[i];
                w->syspaths[j++] = w->syspaths[i];
        }
        if (w->syspaths)
                w->syspaths[j] = NULL;
        w->ops->end(w->userdata, changed);
        /* Polled while a path is planned; a path planned later (a reload, a rescan)
         * arms it again (path_watch_arm_poll). Without paths, no wake-up. */
        if (next > PATH_STATE_POLL_USEC && w->ops->paths_planned(w->userdata))
                next = PATH_STATE_POLL_USEC;
        if (next != UINT64_MAX) {
                (void) sd_event_source_set_time(s, now + next);
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

int path_watch_start(PathWatch *w) {
        int r;

        assert(w);
        assert(!w->source);

        r = sd_event_add_time(w->event, &w->source, CLOCK_MONOTONIC, now_usec(CLOCK_MONOTONIC) + PATH_STATE_POLL_USEC,
                              0, on_path_watch, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->source, "nvme-path-watch");
        return 0;
}

void path_watch_add(PathWatch *w, const char *syspath) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        ssize_t i = -1;
        size_t n;
        int r;

        assert(w);
        assert(syspath);

        n = strv_length(w->syspaths);
        for (size_t k = 0; k < n; k++)
                if (streq(w->syspaths[k], syspath))
                        i = (ssize_t) k;
        if (i < 0) {
                uint64_t *since = realloc(w->since, (n + 1) * sizeof(uint64_t));
                if (!since) {
                        log_oom();
                        return;
                }
                w->since = since;
                if (strv_extend(&w->syspaths, syspath) < 0) {
                        log_oom();
                        return;
                }
                i = (ssize_t) n;
        }
        w->since[i] = now;
        if (!w->source) {
                r = sd_event_add_time(w->event, &w->source, CLOCK_MONOTONIC, now + PATH_WATCH_FAST_USEC, 0,
                                      on_path_watch, w);
                if (r < 0) {
                        log_warning_errno(r, "Cannot watch NVMe paths for a while: %m");
                        return;
                }
                (void) sd_event_source_set_description(w->source, "nvme-path-watch");
        } else {
                (void) sd_event_source_set_time(w->source, now + PATH_WATCH_FAST_USEC);
                (void) sd_event_source_set_enabled(w->source, SD_EVENT_ONESHOT);
        }
}

void path_watch_arm_poll(PathWatch *w) {
        int enabled = SD_EVENT_OFF;

        assert(w);

        if (!w->ops->paths_planned(w->userdata) || !w->source ||
            sd_event_source_get_enabled(w->source, &enabled) < 0 || enabled != SD_EVENT_OFF)
                return;
        (void) sd_event_source_set_time(w->source, now_usec(CLOCK_MONOTONIC) + PATH_STATE_POLL_USEC);
        (void) sd_event_source_set_enabled(w->source, SD_EVENT_ONESHOT);
}
