/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "plan-json.h"
#include "events.h"
#include "fileio.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "rootfs.h"
#include "nvme-apply.h"
#include "originals.h"
#include "reconcile.h"
#include "restore.h"
#include "util.h"

/* Drift accounting (see iotuned(8)): a setting reverted CONFLICT_DRIFTS times within
 * CONFLICT_WINDOW is in conflict with something; we stop writing it for
 * BACKOFF_BASE << level (capped), report that once, and try again afterwards. */
#define USEC_PER_SEC 1000000ULL
#define CONFLICT_WINDOW_USEC (60ULL * USEC_PER_SEC)
#define CONFLICT_DRIFTS 5u
#define BACKOFF_BASE_USEC (30ULL * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (3600ULL * USEC_PER_SEC)
/* A conflict episode ends after this long without drift. */
#define CONFLICT_QUIET_USEC (5ULL * 60ULL * USEC_PER_SEC)
/* udev may queue a burst (hundreds of disks at boot, a JBOF hot-add): a large
 * receive buffer keeps the kernel from dropping events while we work. */
#define MONITOR_RCVBUF (128 * 1024 * 1024)
/* status.json is rewritten on every change, and at least this often so that
 * last_check_realtime_usec shows a monitor the daemon is alive. */
#define STATUS_REFRESH_USEC (60ULL * USEC_PER_SEC)

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->sigterm_source);
        sd_event_source_disable_unref(m->sigint_source);
        sd_event_source_disable_unref(m->sighup_source);
        sd_event_source_disable_unref(m->monitor_source);
        sd_event_source_disable_unref(m->batch_source);
        sd_event_source_disable_unref(m->drift_source);
        sd_event_unref(m->event);
        udev_monitor_unref(m->monitor);
        udev_unref(m->udev);
        strv_free(m->pending);
        config_paths_done(&m->paths);
        config_free(m->config);
        plan_done(&m->plan);
        topology_done(&m->topology);
        irq_table_done(&m->irqs);
        irqbalance_done(&m->irqbalance);
        free(m->our_bans);
        free(m->claimed_bans);
        free(m->leftover_bans);
        free(m->own_bans);
        free(m->bans_path);
        free(m->irqbalance_state);
        free(m->root);
        free(m->originals_dir);
        free(m->modprobe_dropin);
        strv_free(m->rebound);
        strv_free(m->unrecorded);
        strv_free(m->report_pending);
        free(m->report_pending_since);
        free(m->status_path);
        free(m);
        return NULL;
}

int manager_new(const char *root, const char *config_dir, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->root = strdup(root && !streq(root, "/") ? root : "");
        if (!m->root)
                return -ENOMEM;
        /* Under --root: resolved inside the root (rootfs.h). */
        if ((r = root_resolve(root, IOTUNED_RUN_DIR "/originals", &m->originals_dir)) < 0 ||
            (r = root_resolve(root, NVME_MODPROBE_DROPIN, &m->modprobe_dropin)) < 0 ||
            (r = root_resolve(root, IOTUNED_RUN_DIR "/status.json", &m->status_path)) < 0 ||
            (r = root_resolve(root, IOTUNED_RUN_DIR "/" IRQBALANCE_BANS_RECORD, &m->bans_path)) < 0)
                return r;
        r = config_paths_default(m->root, config_dir, &m->paths);
        if (r < 0)
                return r;
        m->udev = udev_new();
        if (!m->udev)
                return -ENOMEM;
        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* ---- reporting ---------------------------------------------------------------- */

/* The metrics textfile, before status.json: whoever sees a new status file finds
 * the metrics of the same state. */
static void manager_write_metrics(Manager *m) {
        int r;

        if (m->config->metrics_textfile) {
                _cleanup_free_ char *path = NULL;
                MetricsCounters mc = {
                        .drifts_corrected = m->drifts_corrected,
                        .conflicts = m->conflicts,
                        .reload_failures = m->reload_failures,
                        .last_reconcile_usec = m->last_check_usec ?: now_usec(CLOCK_REALTIME),
                };
                /* A refusal is said once, until it changes or the file is written again. */
                static char *last_refusal = NULL;
                _cleanup_free_ char *reason = NULL;
                if (root_resolve(m->root, m->config->metrics_textfile, &path) >= 0) {
                        r = metrics_write(path, m->config, &m->plan, &mc, &reason);
                        if (r >= 0) {
                                free(last_refusal);
                                last_refusal = NULL;
                        } else if (reason && !streq_ptr(reason, last_refusal)) {
                                log_error("Not writing the metrics textfile %s: %s", path, reason);
                                free(last_refusal);
                                last_refusal = TAKE_PTR(reason);
                        } else if (!reason)
                                log_warning_errno(r, "Cannot write the metrics textfile %s: %m", path);
                }
        }
}

static void manager_write_status(Manager *m) {
        json_object *j = report_plan_document("status", &m->plan, false), *d;
        const char *text;
        int r;

        manager_write_metrics(m);
        if (!j)
                return;
        d = json_object_new_object();
        json_object_object_add(d, "pid", json_object_new_int((int) getpid()));
        json_object_object_add(d, "reassert_interval_usec", json_object_new_uint64(m->config->reassert_usec));
        json_object_object_add(d, "drifts_corrected", json_object_new_int((int) m->drifts_corrected));
        json_object_object_add(d, "conflicts", json_object_new_int((int) m->conflicts));
        json_object_object_add(d, "reload_failures", json_object_new_int((int) m->reload_failures));
        json_object_object_add(d, "last_check_realtime_usec", json_object_new_uint64(m->last_check_usec));
        {
                json_object *ib = json_object_new_object(), *bans = json_object_new_array();
                json_object_object_add(ib, "pid", m->irqbalance.pid ? json_object_new_int(m->irqbalance.pid) : NULL);
                json_object_object_add(ib, "state", m->irqbalance_state ? json_object_new_string(m->irqbalance_state)
                                                                        : NULL);
                for (size_t i = 0; i < m->n_our_bans; i++)
                        json_object_array_add(bans, json_object_new_int((int) m->our_bans[i]));
                json_object_object_add(ib, "banned_by_iotuned", bans);
                json_object_object_add(d, "irqbalance", ib);
        }
        json_object_object_add(j, "daemon", d);
        text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = write_file_atomic_full(m->status_path, text, strlen(text), WRITE_FILE_EXCL_TEMP);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s: %m", m->status_path);
        json_object_put(j);

}

/* "6 devices: latency 4, throughput 2; 3 drifts corrected; 1 conflict" */
static void manager_notify_status(Manager *m, const char *extra) {
        char buf[1024];
        size_t off = 0;
        unsigned tuned = 0, excluded = 0;
        bool first = true;

        for (size_t i = 0; i < m->plan.n; i++) {
                if (m->plan.devices[i]->excluded)
                        excluded++;
                else
                        tuned++;
        }
        off += snprintf(buf + off, sizeof(buf) - off, "%u device%s", tuned, tuned == 1 ? "" : "s");
        for (size_t p = 0; p < m->config->n_profiles && off < sizeof(buf); p++) {
                const char *name = m->config->profiles[p]->name;
                unsigned n = 0;
                for (size_t i = 0; i < m->plan.n; i++)
                        if (m->plan.devices[i]->profile && !m->plan.devices[i]->excluded &&
                            streq(m->plan.devices[i]->profile, name))
                                n++;
                if (n) {
                        off += snprintf(buf + off, sizeof(buf) - off, "%s %s %u", first ? ":" : ",", name, n);
                        first = false;
                }
        }
        if (off < sizeof(buf) && excluded)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u excluded", excluded);
        if (off < sizeof(buf))
                off += snprintf(buf + off, sizeof(buf) - off, "; %u drift%s corrected", m->drifts_corrected,
                                m->drifts_corrected == 1 ? "" : "s");
        if (off < sizeof(buf) && m->conflicts)
                off += snprintf(buf + off, sizeof(buf) - off, "; %u conflict%s", m->conflicts,
                                m->conflicts == 1 ? "" : "s");
        if (off < sizeof(buf) && extra)
                snprintf(buf + off, sizeof(buf) - off, "; %s", extra);
        (void) sd_notifyf(false, "STATUS=%s", buf);
}

/* ---- irqbalance -------------------------------------------------------------- */

static void set_irqbalance_state(Manager *m, const char *fmt, ...) _printf_(2, 3);
static void set_irqbalance_state(Manager *m, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!streq_ptr(s, m->irqbalance_state))
                m->status_dirty = true; /* the next drift check rewrites status.json */
        free(m->irqbalance_state);
        m->irqbalance_state = s;
}

static bool contains(const unsigned *a, size_t n, unsigned v) {
        for (size_t i = 0; i < n; i++)
                if (a[i] == v)
                        return true;
        return false;
}

static int add_unique(unsigned **a, size_t *n, unsigned v) {
        unsigned *x;
        if (contains(*a, *n, v))
                return 0;
        x = realloc(*a, (*n + 1) * sizeof(unsigned));
        if (!x)
                return -ENOMEM;
        *a = x;
        x[(*n)++] = v;
        return 0;
}

/* irqbalance answers its socket from the same loop that rebalances, which under
 * load (or emulation) takes seconds: ask it only when something changed (our set
 * of vectors, its pid, bans left by an earlier run) and otherwise at most this
 * often, to see bans someone else replaced and confirm withdrawn ones. A drift
 * check must not wait on irqbalance every interval. */
#define IRQBALANCE_RECHECK_USEC (30 * USEC_PER_SEC)
/* At stop, withdrawing the bans is retried until irqbalance's "setup" shows them
 * gone or this long after SIGTERM (well inside a stop timeout of 10 s, and
 * systemd's default of 90 s), with a back-off between failed tries. The first
 * try always gets a full IRQBALANCE_TIMEOUT_MS. */
#define IRQBALANCE_STOP_BUDGET_USEC (8 * USEC_PER_SEC)
#define IRQBALANCE_STOP_SLACK_USEC (2 * USEC_PER_SEC)
#define IRQBALANCE_RETRY_MIN_USEC (100 * 1000ULL)
#define IRQBALANCE_RETRY_MAX_USEC (1 * USEC_PER_SEC)
#define IRQBALANCE_TRY_MIN_MS 200u

static bool same_set(const unsigned *a, size_t na, const unsigned *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!contains(b, nb, a[i]))
                        return false;
        return true;
}

static int cmp_irq(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

/* "40 41 57", sorted; NULL on OOM. */
static char *irq_list(const unsigned *a, size_t n) {
        _cleanup_free_ unsigned *sorted = calloc(n ?: 1, sizeof(unsigned));
        char *s;
        size_t len = 0;

        s = sorted ? malloc(n * 11 + 1) : NULL;
        if (!s)
                return NULL;
        if (n)
                memcpy(sorted, a, n * sizeof(unsigned));
        qsort(sorted, n, sizeof(unsigned), cmp_irq);
        s[0] = 0;
        for (size_t i = 0; i < n; i++)
                len += sprintf(s + len, "%s%u", i ? " " : "", sorted[i]);
        return s;
}

/* Make `irqs` the bans that may be ours in irqbalance `pid`, in memory and in the
 * record (removed when there are none). Without a record the next start cannot
 * finish a withdrawal that fails at stop; nothing else depends on it. */
static void manager_set_claims(Manager *m, int pid, const unsigned *irqs, size_t n) {
        unsigned *copy = NULL;
        int r;

        if (n == 0)
                pid = 0;
        if (m->claims_saved && pid == m->claimed_pid && same_set(irqs, n, m->claimed_bans, m->n_claimed_bans))
                return;
        if (n) {
                copy = malloc(n * sizeof(unsigned));
                if (!copy) {
                        log_oom();
                        return;
                }
                memcpy(copy, irqs, n * sizeof(unsigned));
        }
        free(m->claimed_bans);
        m->claimed_bans = copy;
        m->n_claimed_bans = n;
        m->claimed_pid = pid;
        r = irqbalance_bans_save(m->bans_path, pid, irqs, n);
        m->claims_saved = r >= 0;
        if (r < 0)
                log_warning_errno(r, "Cannot record the irqbalance bans of iotuned in %s: %m", m->bans_path);
}

static void manager_forget_leftovers(Manager *m) {
        free(m->leftover_bans);
        m->leftover_bans = NULL;
        m->n_leftover_bans = 0;
}

static void manager_forget_own_bans(Manager *m) {
        free(m->own_bans);
        m->own_bans = NULL;
        m->n_own_bans = 0;
        m->own_bans_known = false;
}

/* The record an earlier run left, if any: what it may have left banned. Invalid
 * records (not a regular file, too big, not the format) are removed. */
static void manager_load_bans_record(Manager *m) {
        _cleanup_free_ unsigned *irqs = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0;
        int pid = 0, r;

        r = irqbalance_bans_load(m->bans_path, &pid, &irqs, &n);
        if (r == -ENOENT) {
                m->claims_saved = true;
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "Ignoring and removing %s, which is not a valid record of irqbalance bans: %m",
                                  m->bans_path);
                m->claims_saved = unlink(m->bans_path) >= 0 || errno == ENOENT;
                return;
        }
        free(m->claimed_bans);
        m->claimed_bans = TAKE_PTR(irqs);
        m->n_claimed_bans = n;
        m->claimed_pid = n ? pid : 0;
        m->claims_saved = true;
        if (n == 0) {
                manager_set_claims(m, 0, NULL, 0); /* an empty record: remove it */
                return;
        }
        m->leftover_bans = malloc(n * sizeof(unsigned));
        if (!m->leftover_bans) {
                log_oom();
                return;
        }
        memcpy(m->leftover_bans, m->claimed_bans, n * sizeof(unsigned));
        m->n_leftover_bans = n;
        list = irq_list(m->claimed_bans, n);
        log_info("%s: an earlier run of iotuned may have left IRQ%s %s banned in irqbalance (pid %d); withdrawing "
                 "what the configuration does not ban now.",
                 m->bans_path, n == 1 ? "" : "s", list ?: "?", pid);
}

/* Ban exactly the vectors we pin (of profiles with keep_irqbalance_away) and
 * keep every other ban irqbalance has: its "settings ban irqs" replaces the
 * whole list, so we send (current - ours before) + ours now, where "ours before"
 * is every ban that may be ours (claimed_bans: sent, not seen withdrawn yet,
 * leftovers of an earlier run included). A restarted irqbalance (new PID) lost
 * our bans; they are sent again. stopping: withdraw ours. Without the socket we
 * still verify and re-assert, and say so.
 *
 * Returns 0 when irqbalance is in the state we want, as its reply has just shown
 * (or it is gone, and our bans with it), 1 when a change was sent (to be seen in
 * a later reply), or a negative errno when irqbalance could not be asked or told.
 * timeout_ms bounds each request (0: IRQBALANCE_TIMEOUT_MS). */
static int manager_sync_irqbalance_full(Manager *m, bool stopping, unsigned timeout_ms) {
        _cleanup_free_ unsigned *want = NULL, *current = NULL, *own = NULL, *next = NULL, *claim = NULL,
                                *withdrawn = NULL;
        size_t n_want = 0, n_current = 0, n_own = 0, n_next = 0, n_claim = 0, n_withdrawn = 0;
        IrqBalance b = {};
        bool same;
        int r;

        for (size_t i = 0; !stopping && i < m->plan.n; i++) {
                const DevicePlan *p = m->plan.devices[i];
                if (!p->keep_irqbalance_away || p->excluded || p->error)
                        continue;
                for (size_t k = 0; k < p->n_settings; k++) {
                        const Setting *s = &p->settings[k];
                        /* Managed vectors are the kernel's; irqbalance cannot move them either. */
                        if (s->irq >= 0 && s->state != STATE_MANAGED && s->state != STATE_FAILED &&
                            add_unique(&want, &n_want, (unsigned) s->irq) < 0)
                                return log_oom();
                }
        }

        r = irqbalance_find(m->root, &b);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                if (m->irqbalance.pid)
                        log_info(stopping ? "irqbalance (pid %d) is gone, and its runtime bans with it."
                                          : "irqbalance (pid %d) is gone; nothing to ban.",
                                 m->irqbalance.pid);
                else if (m->claimed_pid)
                        log_info("irqbalance (pid %d) is gone, and with it the bans iotuned left there.",
                                 m->claimed_pid);
                irqbalance_done(&m->irqbalance);
                m->n_our_bans = 0;
                manager_forget_own_bans(m);
                manager_forget_leftovers(m);
                manager_set_claims(m, 0, NULL, 0);
                set_irqbalance_state(m, "not running");
                return 0;
        }
        if (m->claimed_pid && m->claimed_pid != b.pid) {
                /* Bans live in the irqbalance process: another one has none of ours. */
                if (m->n_leftover_bans)
                        log_info("irqbalance pid %d, where an earlier run of iotuned left bans, is gone (now pid %d): "
                                 "those bans went with it.",
                                 m->claimed_pid, b.pid);
                manager_forget_leftovers(m);
                manager_set_claims(m, 0, NULL, 0);
        }
        if (b.pid != m->irqbalance.pid) {
                if (m->irqbalance_last_pid && m->irqbalance_last_pid != b.pid)
                        log_info(stopping ? "irqbalance restarted (pid %d -> %d): its runtime bans, ours included, are "
                                            "gone."
                                          : "irqbalance restarted (pid %d -> %d): its runtime bans are gone; "
                                            "re-sending ours.",
                                 m->irqbalance_last_pid, b.pid);
                m->n_our_bans = 0;
                manager_forget_own_bans(m);
        }
        if (stopping && m->n_our_bans == 0 && m->n_claimed_bans == 0) {
                /* Nothing of ours can be banned there: no need to ask. */
                irqbalance_done(&b);
                return 0;
        }
        if (!stopping && b.pid == m->irqbalance.pid && m->irqbalance_synced_usec &&
            now_usec(CLOCK_MONOTONIC) - m->irqbalance_synced_usec < IRQBALANCE_RECHECK_USEC &&
            m->n_leftover_bans == 0 && same_set(want, n_want, m->our_bans, m->n_our_bans)) {
                /* Bans withdrawn but not seen withdrawn yet (claimed_bans) wait for the
                 * next exchange; at the latest the recheck, or the stop, sees them. */
                irqbalance_done(&b);
                return 0;
        }
        m->irqbalance_last_pid = b.pid;
        irqbalance_done(&m->irqbalance);
        m->irqbalance = b;
        m->irqbalance_synced_usec = 0;

        r = irqbalance_get_banned(&m->irqbalance, timeout_ms, &current, &n_current);
        if (r < 0) {
                set_irqbalance_state(m, "socket %s unusable (%s): IRQs are verified and re-asserted only",
                                     m->irqbalance.socket_path, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < n_current; i++) {
                unsigned irq = current[i];
                bool ours =
                        contains(m->our_bans, m->n_our_bans, irq) || contains(m->claimed_bans, m->n_claimed_bans, irq);
                if (!ours && (add_unique(&own, &n_own, irq) < 0 || add_unique(&next, &n_next, irq) < 0))
                        return log_oom();
                /* What may stay ours if this send does not land: it goes on the record first. */
                if (ours && add_unique(&claim, &n_claim, irq) < 0)
                        return log_oom();
                if (contains(m->leftover_bans, m->n_leftover_bans, irq) && !contains(want, n_want, irq) &&
                    add_unique(&withdrawn, &n_withdrawn, irq) < 0)
                        return log_oom();
        }
        for (size_t i = 0; i < n_want; i++)
                if (add_unique(&next, &n_next, want[i]) < 0 || add_unique(&claim, &n_claim, want[i]) < 0)
                        return log_oom();
        /* Kept for a stop at which irqbalance does not answer (see below). */
        free(m->own_bans);
        m->own_bans = TAKE_PTR(own);
        m->n_own_bans = n_own;
        m->own_bans_known = true;
        same = same_set(next, n_next, current, n_current);
        if (same)
                /* The reply shows every ban of ours that is left is still wanted. */
                manager_set_claims(m, m->irqbalance.pid, want, n_want);
        else {
                manager_set_claims(m, m->irqbalance.pid, claim, n_claim);
                r = irqbalance_set_banned(&m->irqbalance, timeout_ms, next, n_next);
                if (r < 0) {
                        set_irqbalance_state(m, "socket %s unusable (%s): IRQs are verified and re-asserted only",
                                             m->irqbalance.socket_path, strerror(-r));
                        return r;
                }
                if (stopping)
                        log_info("irqbalance (pid %d): withdrawing %zu ban%s of iotuned, %zu ban%s of its own kept.",
                                 m->irqbalance.pid, n_claim, n_claim == 1 ? "" : "s", n_next, n_next == 1 ? "" : "s");
                else
                        log_info("irqbalance (pid %d): %zu IRQ%s banned by iotuned, %zu ban%s of its own kept.",
                                 m->irqbalance.pid, n_want, n_want == 1 ? "" : "s", n_next - n_want,
                                 n_next - n_want == 1 ? "" : "s");
                if (n_withdrawn) {
                        _cleanup_free_ char *list = irq_list(withdrawn, n_withdrawn);
                        log_info("withdrew %zu leftover irqbalance ban%s from an earlier run: IRQ%s %s (irqbalance "
                                 "pid %d).",
                                 n_withdrawn, n_withdrawn == 1 ? "" : "s", n_withdrawn == 1 ? "" : "s", list ?: "?",
                                 m->irqbalance.pid);
                }
        }
        manager_forget_leftovers(m);
        free(m->our_bans);
        m->our_bans = TAKE_PTR(want);
        m->n_our_bans = n_want;
        m->irqbalance_synced_usec = now_usec(CLOCK_MONOTONIC);
        set_irqbalance_state(m, "pid %d: %zu IRQ%s banned by iotuned", m->irqbalance.pid, m->n_our_bans,
                             m->n_our_bans == 1 ? "" : "s");
        return same ? 0 : 1;
}

static void manager_sync_irqbalance(Manager *m, bool stopping) {
        (void) manager_sync_irqbalance_full(m, stopping, 0);
}

static void sleep_usec(uint64_t usec) {
        struct timespec ts = { .tv_sec = usec / USEC_PER_SEC, .tv_nsec = (usec % USEC_PER_SEC) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* At stop: withdraw our bans, and make sure irqbalance took them (its "setup" no
 * longer lists them), retrying until `deadline` (CLOCK_MONOTONIC).
 *
 * irqbalance handles one connection per pass of its main loop, in the order they
 * came, and a pass may take seconds on a busy machine. A request given up after
 * IRQBALANCE_TIMEOUT_MS still waits in its queue, so asking again only queues
 * more. When "setup" is not answered in time, the withdrawal is therefore sent
 * at once, computed from irqbalance's own bans in its last reply (this run's
 * last exchange, at most IRQBALANCE_RECHECK_USEC old), to be taken when
 * irqbalance gets to it; after that only its confirmation is awaited, as long as
 * the deadline allows. What may be left is logged (EVENT_BANS_LEFT) and stays on
 * the record for the next start. */
static void manager_withdraw_irqbalance_bans(Manager *m, uint64_t deadline) {
        uint64_t delay = IRQBALANCE_RETRY_MIN_USEC, now = now_usec(CLOCK_MONOTONIC);
        _cleanup_free_ unsigned *left = NULL;
        _cleanup_free_ char *cause = NULL;
        size_t n_left = 0;
        unsigned attempts = 0, failures = 0;
        bool queued = false; /* a withdrawal is on irqbalance's socket, not seen taken yet */
        int r = 0, error = 0;

        if (m->n_our_bans == 0 && m->n_claimed_bans == 0)
                return; /* nothing of ours can be banned anywhere */
        /* Should the unit's stop timeout be shorter than our budget, ask for it. */
        if (deadline > now)
                (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%llu",
                                  (unsigned long long) (deadline - now + IRQBALANCE_STOP_SLACK_USEC));
        for (;;) {
                uint64_t left_ms;
                unsigned timeout_ms;
                int pid;

                now = now_usec(CLOCK_MONOTONIC);
                left_ms = deadline > now ? (deadline - now) / 1000 : 0;
                if (attempts > 0 && left_ms < IRQBALANCE_TRY_MIN_MS)
                        break;
                /* The first attempt always gets a full request's time; once a withdrawal
                 * is queued, waiting longer for the answer behind it is all that helps. */
                timeout_ms = attempts == 0 ? IRQBALANCE_TIMEOUT_MS
                             : queued      ? (unsigned) left_ms
                                           : (unsigned) MIN(left_ms, (uint64_t) IRQBALANCE_TIMEOUT_MS);
                attempts++;
                pid = m->irqbalance.pid;
                r = manager_sync_irqbalance_full(m, true, timeout_ms);
                if (r == 0) {
                        if (failures > 0)
                                log_info("The irqbalance bans of iotuned are withdrawn, after %u failed attempt%s.",
                                         failures, failures == 1 ? "" : "s");
                        return;
                }
                if (r == -ENOMEM)
                        break;
                if (m->irqbalance.pid != pid)
                        queued = false; /* another irqbalance: what we queued went with the old one */
                (void) sd_notify(false, "WATCHDOG=1");
                if (r > 0) {
                        queued = true;
                        continue; /* sent: see at once whether it was taken */
                }
                error = r;
                failures++;
                log_debug_errno(r, "Withdrawing the irqbalance bans failed (attempt %u): %m", attempts);
                if (r == -ETIMEDOUT && !queued && m->own_bans_known) {
                        _cleanup_free_ char *list = irq_list(m->own_bans, m->n_own_bans);
                        int q;

                        now = now_usec(CLOCK_MONOTONIC);
                        left_ms = deadline > now ? (deadline - now) / 1000 : 0;
                        q = irqbalance_set_banned(&m->irqbalance,
                                                  (unsigned) MAX(MIN(left_ms, (uint64_t) IRQBALANCE_TIMEOUT_MS),
                                                                 (uint64_t) IRQBALANCE_TRY_MIN_MS),
                                                  m->own_bans, m->n_own_bans);
                        if (q >= 0) {
                                queued = true;
                                log_info("irqbalance (pid %d) did not answer in time: withdrawing the bans of iotuned "
                                         "from the list it gave last, keeping its own (%s).",
                                         m->irqbalance.pid, m->n_own_bans ? list ?: "?" : "none");
                                continue;
                        }
                        error = q;
                        log_debug_errno(q, "Sending the withdrawal to irqbalance failed too: %m");
                }
                now = now_usec(CLOCK_MONOTONIC);
                if (now + IRQBALANCE_TRY_MIN_MS * 1000ULL >= deadline)
                        break;
                if (!queued) {
                        sleep_usec(MIN(delay, deadline - now - IRQBALANCE_TRY_MIN_MS * 1000ULL));
                        delay = MIN(delay * 2, IRQBALANCE_RETRY_MAX_USEC);
                }
        }

        for (size_t i = 0; i < m->n_claimed_bans; i++)
                (void) add_unique(&left, &n_left, m->claimed_bans[i]);
        for (size_t i = 0; i < m->n_our_bans; i++)
                (void) add_unique(&left, &n_left, m->our_bans[i]);
        if (n_left == 0)
                return;
        if (!m->claims_saved || m->claimed_pid != m->irqbalance.pid)
                manager_set_claims(m, m->irqbalance.pid, left, n_left);
        if (queued)
                (void) asprintf_safe(&cause, "the withdrawal is queued on %s, but irqbalance did not answer before "
                                             "the deadline (%s); it takes effect when irqbalance reads it",
                                     m->irqbalance.socket_path, strerror(error ? -error : ETIMEDOUT));
        else if (error == -ETIMEDOUT)
                (void) asprintf_safe(&cause, "irqbalance did not take or answer a request on %s in time (%s)",
                                     m->irqbalance.socket_path, strerror(-error));
        else
                (void) asprintf_safe(&cause, "its socket %s is unusable (%s)", m->irqbalance.socket_path,
                                     strerror(error ? -error : ENOMEM));
        qsort(left, n_left, sizeof(unsigned), cmp_irq);
        event_irqbalance_bans_left(queued ? LOG_NOTICE : LOG_WARNING, queued, m->irqbalance.pid,
                                   m->irqbalance.socket_path, left, n_left, attempts,
                                   error ? error : -ETIMEDOUT, cause ?: "unknown", m->bans_path);
}

/* ---- tuning ------------------------------------------------------------------- */

static ssize_t plan_index(const Manager *m, const char *name) {
        for (size_t i = 0; i < m->plan.n; i++)
                if (streq(m->plan.devices[i]->device->name, name))
                        return (ssize_t) i;
        return -1;
}

static void stamp_changes(DevicePlan *p) {
        uint64_t now = now_usec(CLOCK_REALTIME);
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].state == STATE_CHANGED)
                        p->settings[k].rt.last_change_usec = now;
}

static void restore_dropped_knobs(Manager *m, const DevicePlan *old, const DevicePlan *new);

/* Carry drift history over to a new plan of the same disk, knob by knob. */
static void keep_runtime(const DevicePlan *old, DevicePlan *new) {
        for (size_t a = 0; a < old->n_settings; a++)
                for (size_t b = 0; b < new->n_settings; b++)
                        if (old->settings[a].knob == new->settings[b].knob &&
                            old->settings[a].irq == new->settings[b].irq) {
                                SettingRuntime keep = old->settings[a].rt;
                                if (new->settings[b].rt.last_change_usec)
                                        keep.last_change_usec = new->settings[b].rt.last_change_usec;
                                keep.last_reported = new->settings[b].state;
                                new->settings[b].rt = keep;
                        }
}

/* Plan and apply one disk from scratch (start, hotplug, reload) and keep its plan.
 * A re-plan of a known disk (udev "change") also restores knobs the new plan no
 * longer sets, exactly as a reload does. */
/* The module-wide NVMe queue counts every current plan, plus `extra`, wants. */
static void module_targets(const Manager *m, DevicePlan *extra, int targets[_KNOB_MAX]) {
        int more[_KNOB_MAX];
        plan_module_targets(m->plan.devices, m->plan.n, targets);
        if (!extra)
                return;
        plan_module_targets(&extra, 1, more);
        for (size_t k = 0; k < _KNOB_MAX; k++)
                targets[k] = MAX(targets[k], more[k]);
}

/* Remove every copy of `s` from the NULL-terminated list `l` (freeing them). */
static void strv_drop(char **l, const char *s) {
        size_t j = 0;
        for (size_t i = 0; l && l[i]; i++) {
                if (streq(l[i], s))
                        free(l[i]);
                else
                        l[j++] = l[i];
        }
        if (l)
                l[j] = NULL;
}

/* The disk is gone, or its queue directory is (block/genhd.c del_gendisk ->
 * blk_unregister_queue removes it before the disk itself). */
static bool device_vanished(const Device *d) {
        _cleanup_free_ char *q = NULL;
        if (asprintf_safe(&q, "%s/queue", d->syspath) < 0)
                return false;
        return access(q, F_OK) < 0 && errno == ENOENT;
}

/* A disk removed while its "add" is being handled fails in ways that look like
 * problems: on 6.1 its scheduler, nr_requests and read_ahead_kb fail (ENOENT,
 * ENODEV, or a write that cannot be read back) for a second or more while the
 * rest of its queue directory still reads fine, and its udev "remove" follows
 * later still. Seen with null_blk unloaded during a burst (tests/vm faults).
 * Such a first tuning of a hot-added disk is reported only once it is
 * PENDING_REPORT_USEC old and the disk is still there; a "remove" before that
 * forgets it silently, after its "removed" entry. */
#define PENDING_REPORT_USEC (5ULL * USEC_PER_SEC)

static bool failure_may_be_removal(const DevicePlan *p) {
        for (size_t k = 0; k < p->n_settings; k++) {
                const Setting *s = &p->settings[k];
                if (s->state == STATE_FAILED)
                        return true;
                /* Attributes every blk-mq queue has: "unsupported" means unreadable. */
                if (s->state == STATE_UNSUPPORTED && s->irq < 0 && p->device->has_mq &&
                    (s->knob->id == KNOB_SCHEDULER || s->knob->id == KNOB_NR_REQUESTS ||
                     s->knob->id == KNOB_READ_AHEAD_KB || s->knob->id == KNOB_NOMERGES ||
                     s->knob->id == KNOB_RQ_AFFINITY))
                        return true;
        }
        return false;
}

static ssize_t pending_index(const Manager *m, const char *name) {
        for (size_t i = 0; m->report_pending && m->report_pending[i]; i++)
                if (streq(m->report_pending[i], name))
                        return (ssize_t) i;
        return -1;
}

static void pending_drop(Manager *m, const char *name) {
        ssize_t i = pending_index(m, name);
        size_t n;
        if (i < 0)
                return;
        n = strv_length(m->report_pending);
        free(m->report_pending[i]);
        memmove(m->report_pending + i, m->report_pending + i + 1, (n - i) * sizeof(char *)); /* with the NULL */
        memmove(m->report_pending_since + i, m->report_pending_since + i + 1, (n - i - 1) * sizeof(uint64_t));
}

static int pending_add(Manager *m, const char *name) {
        size_t n = strv_length(m->report_pending);
        uint64_t *since;
        if (pending_index(m, name) >= 0)
                return 0;
        since = realloc(m->report_pending_since, (n + 1) * sizeof(uint64_t));
        if (!since)
                return -ENOMEM;
        m->report_pending_since = since;
        if (strv_extend(&m->report_pending, name) < 0)
                return -ENOMEM;
        since[n] = now_usec(CLOCK_MONOTONIC);
        return 0;
}

/* reconcile refused to write anything to the disk because its original values
 * could not be recorded (a full or read-only /run): the plan carries the error
 * for the journal and status.json, and the disk is remembered so that every
 * drift check tries again (see manager_retry_unrecorded), without a restart. */
static void set_unrecorded(Manager *m, DevicePlan *p, int r) {
        free(p->error);
        p->error = NULL;
        (void) asprintf_safe(&p->error, "cannot record its original values in %s (%s); nothing was written, retrying at "
                                        "every drift check",
                             m->originals_dir, strerror(-r));
        if (!strv_contains(m->unrecorded, p->device->name))
                (void) strv_extend(&m->unrecorded, p->device->name);
}

static int manager_tune_device(Manager *m, Device *d) {
        int targets[_KNOB_MAX];
        ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = m->originals_dir,
                               .modprobe_dropin = m->modprobe_dropin, .module_targets = targets };
        DevicePlan *p = NULL, **n;
        ssize_t idx;
        int r;

        r = plan_device(m->config, d, &m->ctx, &p);
        if (r < 0)
                return r;
        r = device_plan_confine_to_root(p, m->root); /* --root: vector files inside it */
        if (r < 0) {
                device_plan_free(p);
                return r;
        }
        plan_drop_claimed_irqs(p, m->plan.devices, m->plan.n);
        module_targets(m, p, targets);
        /* A rebind brings the disks back as new devices, which come through here again:
         * once per controller and set of counts, so one that comes back short is not
         * rebound forever (m->rebound). */
        o.allow_rebind = true;
        o.rebound_already = m->rebound;
        r = reconcile_device(p, &o);
        if (p->rebound) {
                const char *addr = p->device->nvme->address;
                if (p->rebind_key && strv_extend(&m->rebound, p->rebind_key) < 0) {
                        device_plan_free(p);
                        return -ENOMEM;
                }
                event_log_tuned(p); /* the rebind's own row: changed, or failed with why */
                event_rebound(p, p->device->nvme->name);
                /* Every plan of that controller is stale now (its namespaces, its vectors):
                 * drop them before a drift check can write to what replaced them. */
                for (size_t i = m->plan.n; i > 0; i--) {
                        const NvmeCtrl *c = m->plan.devices[i - 1]->device->nvme;
                        if (!c || !streq_ptr(c->address, addr))
                                continue;
                        device_plan_free(m->plan.devices[i - 1]);
                        memmove(m->plan.devices + i - 1, m->plan.devices + i, (m->plan.n - i) * sizeof(DevicePlan *));
                        m->plan.n--;
                }
                device_plan_free(p);
                return 1;
        }
        if (r == -ENOMEM) {
                device_plan_free(p);
                return r;
        }
        if (r < 0 && !p->error)
                set_unrecorded(m, p, r);
        else if (r >= 0)
                strv_drop(m->unrecorded, p->device->name);
        stamp_changes(p);
        for (size_t k = 0; k < p->n_settings; k++)
                p->settings[k].rt.last_reported = p->settings[k].state;
        pending_drop(m, p->device->name);
        if (device_vanished(p->device))
                log_debug("%s was removed while it was being tuned; its remove event follows.", p->device->name);
        else if (m->in_batch && failure_may_be_removal(p) && pending_add(m, p->device->name) >= 0)
                log_debug("%s: tuning failed in part; reporting it in %llu s unless the disk is removed meanwhile.",
                          p->device->name, (unsigned long long) (PENDING_REPORT_USEC / USEC_PER_SEC));
        else
                event_log_tuned(p);

        idx = plan_index(m, p->device->name);
        if (idx >= 0) {
                restore_dropped_knobs(m, m->plan.devices[idx], p);
                keep_runtime(m->plan.devices[idx], p);
                device_plan_free(m->plan.devices[idx]);
                m->plan.devices[idx] = p;
                return 0;
        }
        n = realloc(m->plan.devices, (m->plan.n + 1) * sizeof(DevicePlan *));
        if (!n) {
                device_plan_free(p);
                return -ENOMEM;
        }
        m->plan.devices = n;
        m->plan.devices[m->plan.n++] = p;
        return 0;
}

static void manager_forget_device(Manager *m, const char *name) {
        ssize_t idx = plan_index(m, name);
        if (idx < 0)
                return;
        event_device(EVENT_REMOVED, LOG_INFO, m->plan.devices[idx], "%s removed; forgetting its plan and originals",
                     name);
        (void) originals_forget(m->originals_dir, name);
        strv_drop(m->unrecorded, name);
        pending_drop(m, name);
        device_plan_free(m->plan.devices[idx]);
        memmove(m->plan.devices + idx, m->plan.devices + idx + 1, (m->plan.n - idx - 1) * sizeof(DevicePlan *));
        m->plan.n--;
}

static DiscoveryFilter manager_filter(const Manager *m) {
        return (DiscoveryFilter) {
                .loop = m->config->discover[DISCOVERY_LOOP],
                .dm = m->config->discover[DISCOVERY_DM],
                .md = m->config->discover[DISCOVERY_MD],
                .zram = m->config->discover[DISCOVERY_ZRAM],
        };
}

/* Vectors come and go with devices: re-read /proc/interrupts before planning. */
static void manager_refresh_irqs(Manager *m) {
        _cleanup_free_ char *text = NULL;
        IrqTable t = {};
        int r = root_read_file(m->root, "/proc/interrupts", IRQ_TABLE_FILE_MAX, &text);
        if (r >= 0)
                r = irq_table_parse(text, &t);
        if (r < 0) {
                if (r != -ENOENT)
                        log_debug("Cannot read %s/proc/interrupts: %s", m->root, file_strerror(r));
                return; /* keep the previous names */
        }
        irq_table_done(&m->irqs);
        m->irqs = t;
}

static int manager_tune_all(Manager *m) {
        DiscoveryFilter f = manager_filter(m);
        DeviceList l = {};
        int r;

        manager_refresh_irqs(m);
        r = device_enumerate(m->udev, &f, &l);
        if (r < 0)
                return log_error_errno(r, "Cannot enumerate block devices: %m");
        for (size_t i = 0; i < l.n; i++) {
                Device *d = TAKE_PTR(l.items[i]);
                _cleanup_free_ char *rebound = NULL;
                if (d->nvme && d->nvme->address && (rebound = strdup(d->nvme->address)) == NULL) {
                        device_free(d);
                        device_list_done(&l);
                        return log_oom();
                }
                r = manager_tune_device(m, d);
                if (r < 0) {
                        device_list_done(&l);
                        return log_error_errno(r, "Cannot tune devices: %m");
                }
                if (r > 0)
                        /* A rebind: the controller's other disks in this list are gone; udev
                         * brings them back as "add" events, tuned from those. */
                        for (size_t j = i + 1; j < l.n; j++)
                                if (l.items[j] && l.items[j]->nvme && streq_ptr(l.items[j]->nvme->address, rebound))
                                        l.items[j] = device_free(l.items[j]);
        }
        device_list_done(&l);
        return 0;
}

/* ---- drift -------------------------------------------------------------------- */

static void note_drift(Manager *m, DevicePlan *p, Setting *s, uint64_t now) {
        SettingRuntime *rt = &s->rt;

        rt->drifts++;
        m->drifts_corrected++;
        if (now - rt->window_start_usec > CONFLICT_WINDOW_USEC || rt->window_start_usec == 0) {
                rt->window_start_usec = now;
                rt->window_drifts = 0;
        }
        rt->window_drifts++;
        event_setting(EVENT_DRIFT, LOG_NOTICE, p, s, "%s: %s drifted to %s (desired %s); put back", p->device->name,
                      setting_label(s), s->previous ?: "?", s->effective);

        if (rt->window_drifts >= CONFLICT_DRIFTS) {
                uint64_t hold = BACKOFF_BASE_USEC << MIN(rt->backoff_level, 7u);
                hold = MIN(hold, BACKOFF_MAX_USEC);
                rt->hold_until_usec = now + hold;
                rt->backoff_level++;
                rt->window_drifts = 0;
                rt->window_start_usec = now;
                if (!rt->conflict) {
                        rt->conflict = true;
                        m->conflicts++;
                        event_setting(EVENT_CONFLICT, LOG_WARNING, p, s,
                                      "%s: %s keeps being changed back to %s (%u times in %llu s); not writing it for "
                                      "%llu s. Another tuning agent (TuneD, a udev rule, a boot script, irqbalance) "
                                      "is fighting iotuned: remove one of them, or exclude the device in iotuned.yaml",
                                      p->device->name, setting_label(s), s->previous ?: "?", CONFLICT_DRIFTS,
                                      (unsigned long long) (CONFLICT_WINDOW_USEC / USEC_PER_SEC),
                                      (unsigned long long) (hold / USEC_PER_SEC));
                } else
                        log_debug("%s %s: still in conflict, holding %llu s", p->device->name, setting_label(s),
                                  (unsigned long long) (hold / USEC_PER_SEC));
        }
}

/* A disk left untuned because its originals could not be recorded: try again.
 * 1 when it is tuned now (logged as at hotplug), 0 while recording still fails
 * (logged once, when it first failed), -ENOMEM. */
static int manager_retry_unrecorded(Manager *m, DevicePlan *p, const ReconcileOptions *o) {
        _cleanup_free_ char *error = TAKE_PTR(p->error);
        int r;

        r = reconcile_device(p, o);
        if (r == -ENOMEM) {
                p->error = TAKE_PTR(error);
                return r;
        }
        if (r < 0) {
                p->error = TAKE_PTR(error);
                return 0;
        }
        strv_drop(m->unrecorded, p->device->name);
        stamp_changes(p);
        for (size_t k = 0; k < p->n_settings; k++)
                p->settings[k].rt.last_reported = p->settings[k].state;
        log_info("%s: its original values are recorded now; tuning it.", p->device->name);
        event_log_tuned(p);
        return 1;
}

int manager_check_drift(Manager *m) {
        int targets[_KNOB_MAX];
        ReconcileOptions o = { .mode = RECONCILE_APPLY, .originals_dir = m->originals_dir,
                               .modprobe_dropin = m->modprobe_dropin, .module_targets = targets };
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool changed = false;
        int r;

        module_targets(m, NULL, targets);
        for (size_t i = 0; i < m->plan.n; i++) {
                DevicePlan *p = m->plan.devices[i];

                ssize_t pi = pending_index(m, p->device->name);
                if (pi >= 0) {
                        /* Its first tuning waits to be reported (or forgotten with the disk). */
                        if (now - m->report_pending_since[pi] < PENDING_REPORT_USEC)
                                continue;
                        if (device_vanished(p->device)) {
                                log_debug("%s was removed while it was being tuned; its remove event follows.",
                                          p->device->name);
                                continue;
                        }
                        pending_drop(m, p->device->name);
                        event_log_tuned(p);
                        changed = true;
                        continue; /* corrected, if needed, from the next check on */
                }
                if (device_vanished(p->device))
                        continue; /* its remove event is on the way */
                if (p->error && strv_contains(m->unrecorded, p->device->name)) {
                        r = manager_retry_unrecorded(m, p, &o);
                        if (r == -ENOMEM)
                                return r;
                        changed = changed || r > 0;
                        continue;
                }
                if (p->excluded || p->error)
                        continue;
                for (size_t k = 0; k < p->n_settings; k++) {
                        Setting *s = &p->settings[k];
                        s->hold = s->rt.hold_until_usec > now;
                        if (s->rt.conflict && !s->hold && s->rt.window_start_usec &&
                            now - s->rt.window_start_usec > CONFLICT_QUIET_USEC) {
                                s->rt.conflict = false; /* quiet for long enough: episode over */
                                s->rt.backoff_level = 0;
                        }
                }
                r = reconcile_device(p, &o);
                if (r == -ENOMEM)
                        return r;
                for (size_t k = 0; k < p->n_settings; k++) {
                        Setting *s = &p->settings[k];
                        if (s->state == STATE_CHANGED) {
                                s->rt.last_change_usec = now_usec(CLOCK_REALTIME);
                                note_drift(m, p, s, now);
                                changed = true;
                        } else if (s->state == STATE_FAILED && s->rt.last_reported != STATE_FAILED) {
                                event_setting(EVENT_FAILED, LOG_WARNING, p, s, "%s: %s: %s", p->device->name,
                                              setting_label(s), s->note ?: "failed");
                                changed = true;
                        } else if (s->state != s->rt.last_reported)
                                changed = true;
                        s->rt.last_reported = s->state;
                        s->hold = false;
                }
        }
        uint64_t checked = now_usec(CLOCK_MONOTONIC);
        manager_sync_irqbalance(m, false);
        log_debug("Drift check: %llu ms reading and writing, %llu ms irqbalance.",
                  (unsigned long long) ((checked - now) / 1000),
                  (unsigned long long) ((now_usec(CLOCK_MONOTONIC) - checked) / 1000));
        if (changed || m->status_dirty || now_usec(CLOCK_REALTIME) - m->last_check_usec >= STATUS_REFRESH_USEC) {
                m->status_dirty = false;
                m->last_check_usec = now_usec(CLOCK_REALTIME);
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
        return 0;
}

static int arm_drift_timer(Manager *m);

static int on_drift_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r = manager_check_drift(m);
        if (r < 0)
                log_error_errno(r, "Drift check failed: %m");
        return arm_drift_timer(m);
}

static int arm_drift_timer(Manager *m) {
        uint64_t interval = m->config->reassert_usec, jitter = 0;
        int r;

        /* Up to 10% jitter so a fleet's nodes do not all read sysfs in lockstep. */
        if (getrandom(&jitter, sizeof(jitter), GRND_NONBLOCK) != sizeof(jitter))
                jitter = 0;
        jitter %= interval / 10 + 1;

        if (m->drift_source) {
                r = sd_event_source_set_time_relative(m->drift_source, interval + jitter);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->drift_source, SD_EVENT_ONESHOT);
                return r;
        }
        r = sd_event_add_time_relative(m->event, &m->drift_source, CLOCK_MONOTONIC, interval + jitter,
                                       interval / 20, on_drift_timer, m);
        if (r < 0)
                return r;
        return sd_event_source_set_description(m->drift_source, "drift-check");
}

/* ---- udev --------------------------------------------------------------------- */

static int on_batch(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        _cleanup_strv_free_ char **batch = TAKE_PTR(m->pending);
        DiscoveryFilter f = manager_filter(m);
        bool changed = false;

        (void) sd_event_source_set_enabled(m->batch_source, SD_EVENT_OFF);
        manager_refresh_irqs(m);
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
                u = udev_device_new_from_syspath(m->udev, syspath);
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

static int manager_watch_udev(Manager *m) {
        int r;

        /* "udev", not "kernel": udev rules have run when we see the event, so our
         * values are written after theirs. */
        m->monitor = udev_monitor_new_from_netlink(m->udev, "udev");
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

/* ---- configuration ------------------------------------------------------------ */

static int manager_load_config(Manager *m, bool reload, Config **ret) {
        Diag diag = {};
        int r = config_load(&m->paths, ret, &diag);

        for (size_t i = 0; i < diag.n; i++)
                event_config_error(&diag.items[i], reload);
        diag_done(&diag);
        return r;
}

/* Knobs a disk had in its old plan and does not have in the new one go back to
 * their originals; everything else is simply re-planned. */
static void restore_dropped_knobs(Manager *m, const DevicePlan *old, const DevicePlan *new) {
        bool drop[_KNOB_MAX] = {}, any = false;
        _cleanup_free_ int *irqs = calloc(old->n_settings ?: 1, sizeof(int));
        size_t n_irqs = 0;
        DevicePlan *rp = NULL;
        Device *d = NULL;

        if (!irqs)
                return;
        for (size_t k = 0; k < old->n_settings; k++) {
                const Setting *s = &old->settings[k];
                bool kept = false;
                for (size_t j = 0; new && !new->excluded && !new->error && j < new->n_settings; j++)
                        kept = kept || (new->settings[j].knob == s->knob && new->settings[j].irq == s->irq);
                if (kept)
                        continue;
                any = true;
                if (s->irq >= 0)
                        irqs[n_irqs++] = s->irq;
                else
                        drop[s->knob->id] = true;
        }
        if (!any || device_lookup(m->udev, old->device->name, &d) < 0)
                return;
        if (restore_knobs(m->originals_dir, m->root, d, drop, irqs, n_irqs, &rp) < 0)
                return;
        for (size_t k = 0; k < rp->n_settings; k++)
                if (rp->settings[k].state == STATE_CHANGED)
                        event_setting(EVENT_RESTORE, LOG_INFO, rp, &rp->settings[k],
                                      "%s: %s%s%s no longer tuned by the new configuration; restored %s",
                                      rp->device->name, setting_label(&rp->settings[k]), "", "",
                                      rp->settings[k].observed);
        device_plan_free(rp);
}

static int manager_reload(Manager *m) {
        _cleanup_(config_freep) Config *c = NULL;
        Plan old;
        int r;

        log_info("Reloading configuration.");
        r = manager_load_config(m, true, &c);
        if (r < 0) {
                m->reload_failures++;
                manager_notify_status(m, "last reload refused: invalid configuration (journalctl -u iotuned)");
                return 0; /* keep running with the old configuration */
        }

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long) now_usec(CLOCK_MONOTONIC));
        config_free(m->config);
        m->config = TAKE_PTR(c);
        {
                /* CPUs may have been isolated or brought online since start. */
                Topology t = {};
                if (topology_load(&t) >= 0) {
                        topology_done(&m->topology);
                        m->topology = t;
                }
        }
        old = m->plan;
        m->plan = (Plan) {};
        r = manager_tune_all(m);
        for (size_t i = 0; i < old.n; i++) {
                ssize_t idx = plan_index(m, old.devices[i]->device->name);
                restore_dropped_knobs(m, old.devices[i], idx >= 0 ? m->plan.devices[idx] : NULL);
        }
        /* Keep drift history for settings that survived the reload. */
        for (size_t i = 0; i < old.n; i++) {
                ssize_t idx = plan_index(m, old.devices[i]->device->name);
                if (idx >= 0)
                        keep_runtime(old.devices[i], m->plan.devices[idx]);
        }
        plan_done(&old);
        manager_sync_irqbalance(m, false);
        (void) arm_drift_timer(m);
        manager_write_status(m);
        manager_notify_status(m, NULL);
        (void) sd_notify(false, "READY=1");
        return r;
}

/* ---- signals and lifecycle ---------------------------------------------------- */

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata);
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        Plan restored = {};
        _cleanup_strv_free_ char **gone = NULL;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + IRQBALANCE_STOP_BUDGET_USEC;
        int r;

        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping.");
        if (m->config->restore_on_stop) {
                r = restore_originals(m->udev, m->originals_dir, m->root, NULL, &restored, &gone);
                if (r < 0)
                        log_error_errno(r, "Cannot restore original values: %m");
                for (size_t i = 0; i < restored.n; i++)
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
                plan_done(&restored);
        } else
                log_info("restore_on_stop is off: leaving tuned values in place.");
        manager_withdraw_irqbalance_bans(m, deadline);
        (void) unlink(m->status_path);
        if (m->config->metrics_textfile) {
                /* Stale numbers are worse than none: node_exporter then reports no iotuned_* series. */
                _cleanup_free_ char *path = NULL;
                if (root_resolve(m->root, m->config->metrics_textfile, &path) >= 0)
                        (void) unlink(path);
        }
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int manager_start(Manager *m) {
        sigset_t mask;
        int r;

        r = manager_load_config(m, false, &m->config);
        if (r < 0) {
                (void) sd_notify(false, "STATUS=Invalid configuration; not started (journalctl -u iotuned).");
                return log_error_errno(r, "Refusing to start: the configuration is invalid.");
        }
        r = topology_load(&m->topology);
        if (r < 0)
                return log_error_errno(r, "Cannot read the CPU topology: %m");
        /* Bans an earlier run could not withdraw: the first synchronisation does. */
        manager_load_bans_record(m);
        m->ctx = (PlanContext) { .topology = &m->topology, .irqs = &m->irqs, .proc_root = m->root };

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
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %m");

        /* Watch before enumerating, so a disk that appears in between is not missed
         * (at worst it is tuned twice, which changes nothing the second time). */
        r = manager_watch_udev(m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch udev events: %m");
        r = manager_tune_all(m);
        if (r < 0)
                return r;
        r = arm_drift_timer(m);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the drift timer: %m");
        manager_sync_irqbalance(m, false);

        manager_write_status(m);
        manager_notify_status(m, NULL);
        (void) sd_notify(false, "READY=1");
        log_info("Started: tuning %zu device%s, checking for drift every %llu ms.", m->plan.n,
                 m->plan.n == 1 ? "" : "s", (unsigned long long) (m->config->reassert_usec / 1000));
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}
