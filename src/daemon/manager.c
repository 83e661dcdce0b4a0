/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's life: set-up, start (READY=1 once every present disk is tuned),
 * the signals (SIGHUP reloads; SIGTERM and SIGINT restore, withdraw the
 * irqbalance bans and stop) and the event loop. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "events.h"
#include "fileio.h"
#include "irqset.h"
#include "log.h"
#include "manager-internal.h"
#include "originals.h"
#include "timing.h"
#include "util.h"

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->sigterm_source);
        sd_event_source_disable_unref(m->sigint_source);
        sd_event_source_disable_unref(m->sighup_source);
        udev_batch_free(m->udev);
        kernel_queue_free(m->kernel);
        path_watch_free(m->paths);
        bankeeper_free(m->bans);
        drift_check_free(m->drift);
        heap_trimmer_free(m->trimmer);
        publisher_free(m->publisher);
        sd_event_unref(m->event);
        config_free(m->config);
        manager_plan_names_drop(m);
        plan_done(&m->plan);
        tuner_done(&m->tuner);
        strv_free(m->unrecorded);
        strv_free(m->held);
        strv_free(m->hold_ignored);
        strv_free(m->report_pending);
        free(m->report_pending_since);
        free(m);
        return NULL;
}

/* Descriptors kept open for the rows read at every drift check (fileio.h): each
 * costs the kernel a page for its seq_file buffer while it stays open, so there
 * is a cap (4096 disks of four queue rows), and a reserve below the limit for
 * everything else the daemon opens. */
#define KEPT_ATTR_MAX 16384U
#define FD_RESERVE 512U

static void budget_kept_attrs(void) {
        struct rlimit rl;
        unsigned budget = 0;

        /* The soft limit of 1024 is for select(2), which nothing here uses; the
         * hard limit (systemd's default 524288) is what is given. */
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0) {
                if (rl.rlim_cur < rl.rlim_max) {
                        struct rlimit raised = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
                        if (setrlimit(RLIMIT_NOFILE, &raised) >= 0)
                                rl = raised;
                }
                if (rl.rlim_cur > FD_RESERVE * 2)
                        budget = (unsigned) MIN(rl.rlim_cur - FD_RESERVE, (rlim_t) KEPT_ATTR_MAX);
        }
        kept_attr_set_budget(budget);
        log_debug("Up to %u attribute descriptors kept open between drift checks.", budget);
}

/* The vectors the BanKeeper bans: those pinned for profiles with
 * keep_irqbalance_away. */
static int wanted_bans(void *userdata, unsigned **ret, size_t *ret_n) {
        const Manager *m = userdata;
        _cleanup_free_ unsigned *want = NULL;
        size_t n_want = 0;

        assert(m);

        for (size_t i = 0; i < m->plan.n; i++) {
                const DevicePlan *p = m->plan.devices[i];
                if (!p->keep_irqbalance_away || p->excluded || p->error)
                        continue;
                for (size_t k = 0; k < p->n_settings; k++) {
                        const Setting *s = &p->settings[k];
                        /* Managed vectors are the kernel's; irqbalance cannot move them either. */
                        if (s->irq >= 0 && s->state != STATE_MANAGED && s->state != STATE_FAILED &&
                            irqset_add(&want, &n_want, (unsigned) s->irq) < 0)
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(want);
        *ret_n = n_want;
        return 0;
}

static void bans_state_changed(void *userdata) {
        Manager *m = userdata;

        publisher_mark_dirty(m->publisher);
}

/* An irqbalance exchange ended: publish what changed meanwhile. */
static void bans_idle(void *userdata) {
        Manager *m = userdata;

        if (publisher_take_dirty(m->publisher)) {
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
}

static const BanKeeperOps bankeeper_ops = {
        .wanted = wanted_bans,
        .state_changed = bans_state_changed,
        .idle = bans_idle,
};

int manager_new(const char *root, const char *config_dir, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        assert(ret);

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        budget_kept_attrs();
        r = tuner_init(&m->tuner, root, config_dir);
        if (r < 0)
                return r;
        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        r = heap_trimmer_new(m->event, &m->trimmer);
        if (r < 0)
                return r;
        r = publisher_new(m->event, m->tuner.root, &m->publisher);
        if (r < 0)
                return r;
        r = bankeeper_new(m->event, m->tuner.root, &bankeeper_ops, m, &m->bans);
        if (r < 0)
                return r;
        r = drift_check_new(m->event, manager_run_drift_check, m, &m->drift);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        assert(userdata);

        timing_begin(0, "reload");
        (void) manager_reload(userdata);
        timing_end_log();
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        Plan restored = {};
        _cleanup_strv_free_ char **gone = NULL;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + IRQBALANCE_STOP_BUDGET_USEC;

        assert(m);
        int r;

        timing_begin(0, "stop");
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping.");
        if (m->config->restore_on_stop) {
                /* The disks it has probed are known: only their diskseq is read again. */
                r = tuner_restore(&m->tuner, NULL, &m->plan, &restored, &gone);
                if (r < 0)
                        log_error_errno(r, "Cannot restore original values: %m");
                for (size_t i = 0; i < restored.n; i++) {
                        timing_count_disk();
                        for (size_t k = 0; k < restored.devices[i]->n_settings; k++) {
                                const Setting *st = &restored.devices[i]->settings[k];
                                if (st->state == STATE_CHANGED)
                                        event_setting(EVENT_RESTORE, LOG_INFO, restored.devices[i], st,
                                                      "%s: %s restored to %s", restored.devices[i]->device->name,
                                                      setting_label(st), st->observed);
                                else if (st->state == STATE_FAILED)
                                        event_setting(EVENT_FAILED, LOG_WARNING, restored.devices[i], st,
                                                      "%s: %s could not be restored: %s",
                                                      restored.devices[i]->device->name, setting_label(st),
                                                      st->note ?: "failed");
                        }
                }
                plan_done(&restored);
        } else
                log_info("restore_on_stop is off: leaving tuned values in place.");
        bankeeper_withdraw(m->bans, deadline);
        publisher_unpublish(m->publisher, m->config);
        timing_end_log();
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* Right after READY=1: tell irqbalance which vectors are ours, and publish what
 * it said. */
static int on_started(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        assert(m);

        timing_begin(0, "irqbalance");
        manager_sync_irqbalance(m);
        if (publisher_take_dirty(m->publisher)) {
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
        timing_end_log();
        return 0;
}

int manager_start(Manager *m) {
        sigset_t mask;
        int r;

        assert(m);

        /* From main()'s first line: what a start costs the daemon itself. */
        timing_begin(timing_main_usec, "start");
        r = manager_load_config(m, false, &m->config);
        if (r < 0) {
                (void) sd_notify(false, "STATUS=Invalid configuration; not started (journalctl -u iotuned).");
                return log_error_errno(r, "Refusing to start: the configuration is invalid.");
        }
        /* Bans an earlier run could not withdraw: the first synchronisation does. */
        bankeeper_load_record(m->bans);
        /* A run killed while it wrote a record left its temporary. */
        r = originals_remove_temporaries(m->tuner.originals_dir);
        if (r > 0)
                log_info("Removed %i temporary file%s that a killed run left in %s.", r, r == 1 ? "" : "s",
                         m->tuner.originals_dir);
        else if (r < 0)
                log_warning_errno(r, "Cannot look for temporary files in %s: %m", m->tuner.originals_dir);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");
        if ((r = sd_event_add_signal(m->event, &m->sigterm_source, SIGTERM, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sigint_source, SIGINT, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, &m->sighup_source, SIGHUP, on_sighup, m)) < 0)
                return log_error_errno(r, "Cannot watch signals: %m");

        /* Watch before enumerating, so a disk that appears in between is not missed
         * (at worst it is tuned twice, which changes nothing the second time). */
        /* Before the first tuning, which may take long with many disks. */
        publisher_setup_watchdog(m->publisher, m->config->reassert_usec);
        r = manager_watch_udev(m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch udev events: %m");
        r = manager_watch_kernel(m);
        if (r < 0)
                /* udev's events still come: hot-added disks are tuned once udev is done. */
                log_warning_errno(r, "Cannot watch the kernel's events; tuning hot-added disks at udev's: %m");
        r = manager_tune_all(m);
        if (r < 0)
                return r;
        manager_arm_path_poll(m);
        heap_trim(m->plan.n);
        r = manager_arm_drift_timer(m);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the drift timer: %m");
        /* irqbalance answers from the loop that rebalances, which under load takes
         * seconds (its request's 2 s limit was seen spent at every other start in
         * the test bed): the disks are tuned, so READY=1 does not wait for it. The
         * bans follow at the loop's first turn (on_started). */
        r = sd_event_add_defer(m->event, NULL, on_started, m);
        if (r < 0) {
                log_debug_errno(r, "Cannot defer irqbalance's synchronisation, doing it now: %m");
                manager_sync_irqbalance(m);
        }

        manager_write_status(m);
        manager_notify_status(m, NULL);
        timing_enter(TIMING_NOTIFY);
        (void) sd_notify(false, "READY=1");
        timing_leave();
        timing_end_log();
        log_info("Started: tuning %zu device%s, checking for drift every %llu ms.", m->plan.n,
                 m->plan.n == 1 ? "" : "s", (unsigned long long) (m->config->reassert_usec / 1000));
        return 0;
}

int manager_run(Manager *m) {
        assert(m);

        return sd_event_loop(m->event);
}
