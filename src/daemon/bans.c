/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The irqbalance ban policy: the vectors iotuned pins are banned at runtime
 * through irqbalance's socket, irqbalance's own bans are kept, and what may be
 * iotuned's is on a record (IRQBALANCE_BANS_RECORD) until seen withdrawn, so
 * that a later start can finish a withdrawal a stop could not. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "irqset.h"
#include "log.h"
#include "manager-internal.h"
#include "timing.h"
#include "util.h"

static void set_irqbalance_state(Manager *m, const char *fmt, ...) _printf_(2, 3);
static void set_irqbalance_state(Manager *m, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;

        assert(m);
        assert(fmt);

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!streq_ptr(s, m->irqbalance_state))
                publisher_mark_dirty(m->publisher); /* the next drift check rewrites status.json */
        free(m->irqbalance_state);
        m->irqbalance_state = s;
}

/* irqbalance answers its socket from the same loop that rebalances, which under
 * load (or emulation) takes seconds: ask it only when something changed (our set
 * of vectors, its pid, bans left by an earlier run) and otherwise at most this
 * often, to see bans someone else replaced and confirm withdrawn ones. */
#define IRQBALANCE_RECHECK_USEC (30 * USEC_PER_SEC)
/* At stop, withdrawing the bans is retried until irqbalance's "setup" shows them
 * gone or this long after SIGTERM (well inside a stop timeout of 10 s, and
 * systemd's default of 90 s), with a back-off between failed tries. The first
 * try always gets a full IRQBALANCE_TIMEOUT_MS. */
#define IRQBALANCE_STOP_SLACK_USEC (2 * USEC_PER_SEC)
#define IRQBALANCE_RETRY_MIN_USEC (100 * 1000ULL)
#define IRQBALANCE_RETRY_MAX_USEC (1 * USEC_PER_SEC)
#define IRQBALANCE_TRY_MIN_MS 200u

/* Make `irqs` the bans that may be ours in irqbalance `pid`, in memory and in the
 * record (removed when there are none). Without a record the next start cannot
 * finish a withdrawal that fails at stop; nothing else depends on it. */
static void manager_set_claims(Manager *m, int pid, const unsigned *irqs, size_t n) {
        unsigned *copy = NULL;
        int r;

        assert(m);

        if (n == 0)
                pid = 0;
        if (m->claims_saved && pid == m->claimed_pid && irqset_equal(irqs, n, m->claimed_bans, m->n_claimed_bans))
                return;
        if (irqset_copy(irqs, n, &copy) < 0) {
                log_oom();
                return;
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
        assert(m);

        free(m->leftover_bans);
        m->leftover_bans = NULL;
        m->n_leftover_bans = 0;
}

static void manager_forget_own_bans(Manager *m) {
        assert(m);

        free(m->own_bans);
        m->own_bans = NULL;
        m->n_own_bans = 0;
        m->own_bans_known = false;
}

/* The record an earlier run left, if any: what it may have left banned. Invalid
 * records (not a regular file, too big, not the format) are removed. */
void manager_load_bans_record(Manager *m) {
        _cleanup_free_ unsigned *irqs = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0;
        int pid = 0, r;

        assert(m);

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
        if (irqset_copy(m->claimed_bans, n, &m->leftover_bans) < 0) {
                log_oom();
                return;
        }
        m->n_leftover_bans = n;
        list = irqset_format(m->claimed_bans, n);
        log_info("%s: an earlier run of iotuned may have left IRQ%s %s banned in irqbalance (pid %d); withdrawing "
                 "what the configuration does not ban now.",
                 m->bans_path, n == 1 ? "" : "s", list ?: "?", pid);
}

/* The vectors we ban: those we pin for profiles with keep_irqbalance_away (none
 * when stopping). */
static int wanted_bans(const Manager *m, bool stopping, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ unsigned *want = NULL;
        size_t n_want = 0;

        for (size_t i = 0; !stopping && i < m->plan.n; i++) {
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

static int sync_failed(Manager *m, int error) {
        set_irqbalance_state(m, "socket %s unusable (%s): IRQs are verified and re-asserted only",
                             m->irqbalance.socket_path, strerror(-error));
        return error;
}

/* Ban exactly the vectors we pin (of profiles with keep_irqbalance_away) and
 * keep every other ban irqbalance has: its "settings ban irqs" replaces the
 * whole list, so we send (current - ours before) + ours now, where "ours before"
 * is every ban that may be ours (claimed_bans: sent, not seen withdrawn yet,
 * leftovers of an earlier run included). A restarted irqbalance (new PID) lost
 * our bans; they are sent again. stopping: withdraw ours. Without the socket we
 * still verify and re-assert, and say so.
 *
 * In two halves, around irqbalance's answer to "setup": sync_begin() finds
 * irqbalance and decides whether it must be asked (0: no, the state is known; 1:
 * ask m->irqbalance), sync_finish() takes the answer and sends what is to change.
 * Both return 0 when irqbalance is in the state we want, as its reply has just
 * shown (or it is gone, and our bans with it), 1 when a change was sent (to be
 * seen in a later reply), or a negative errno when irqbalance could not be asked
 * or told. */
static int sync_begin(Manager *m, bool stopping) {
        _cleanup_free_ unsigned *want = NULL;
        size_t n_want = 0;
        IrqBalance b = {};
        int r;

        assert(m);

        if (wanted_bans(m, stopping, &want, &n_want) < 0)
                return log_oom();
        r = irqbalance_find(m->tuner.root, &b);
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
        /* With nothing of ours to ban, banned or claimed, the periodic recheck has
         * nothing to verify: an idle daemon that pins no vector does not wake
         * irqbalance (or itself) every IRQBALANCE_RECHECK_USEC. */
        bool nothing_ours = n_want == 0 && m->n_our_bans == 0 && m->n_claimed_bans == 0;
        if (!stopping && b.pid == m->irqbalance.pid && m->irqbalance_synced_usec &&
            (nothing_ours || now_usec(CLOCK_MONOTONIC) - m->irqbalance_synced_usec < IRQBALANCE_RECHECK_USEC) &&
            m->n_leftover_bans == 0 && irqset_equal(want, n_want, m->our_bans, m->n_our_bans)) {
                /* Bans withdrawn but not seen withdrawn yet (claimed_bans) wait for the
                 * next exchange; at the latest the recheck, or the stop, sees them. */
                irqbalance_done(&b);
                return 0;
        }
        m->irqbalance_last_pid = b.pid;
        irqbalance_done(&m->irqbalance);
        m->irqbalance = b;
        m->irqbalance_synced_usec = 0;
        return 1;
}

/* current: the bans in irqbalance's answer to "setup". send_timeout_ms bounds the
 * send of a change (0: it does not wait; -EAGAIN when irqbalance's backlog is
 * full). The vectors to ban are those of the plans now. */
static int sync_finish(Manager *m, bool stopping, const unsigned *current, size_t n_current,
                       unsigned send_timeout_ms) {
        _cleanup_free_ unsigned *want = NULL, *own = NULL, *next = NULL, *claim = NULL, *withdrawn = NULL;
        size_t n_want = 0, n_own = 0, n_next = 0, n_claim = 0, n_withdrawn = 0;
        bool same;
        int r;

        assert(m);

        if (wanted_bans(m, stopping, &want, &n_want) < 0)
                return log_oom();
        for (size_t i = 0; i < n_current; i++) {
                unsigned irq = current[i];
                bool ours =
                        irqset_contains(m->our_bans, m->n_our_bans, irq) || irqset_contains(m->claimed_bans, m->n_claimed_bans, irq);
                if (!ours && (irqset_add(&own, &n_own, irq) < 0 || irqset_add(&next, &n_next, irq) < 0))
                        return log_oom();
                /* What may stay ours if this send does not land: it goes on the record first. */
                if (ours && irqset_add(&claim, &n_claim, irq) < 0)
                        return log_oom();
                if (irqset_contains(m->leftover_bans, m->n_leftover_bans, irq) && !irqset_contains(want, n_want, irq) &&
                    irqset_add(&withdrawn, &n_withdrawn, irq) < 0)
                        return log_oom();
        }
        for (size_t i = 0; i < n_want; i++)
                if (irqset_add(&next, &n_next, want[i]) < 0 || irqset_add(&claim, &n_claim, want[i]) < 0)
                        return log_oom();
        /* Kept for a stop at which irqbalance does not answer (see below). */
        free(m->own_bans);
        m->own_bans = TAKE_PTR(own);
        m->n_own_bans = n_own;
        m->own_bans_known = true;
        same = irqset_equal(next, n_next, current, n_current);
        if (same)
                /* The reply shows every ban of ours that is left is still wanted. */
                manager_set_claims(m, m->irqbalance.pid, want, n_want);
        else {
                manager_set_claims(m, m->irqbalance.pid, claim, n_claim);
                r = irqbalance_set_banned(&m->irqbalance, send_timeout_ms, next, n_next);
                if (r == -EAGAIN)
                        return r; /* not sent: the caller asks again */
                if (r < 0)
                        return sync_failed(m, r);
                if (stopping)
                        log_info("irqbalance (pid %d): withdrawing %zu ban%s of iotuned, %zu ban%s of its own kept.",
                                 m->irqbalance.pid, n_claim, n_claim == 1 ? "" : "s", n_next, n_next == 1 ? "" : "s");
                else
                        log_info("irqbalance (pid %d): %zu IRQ%s banned by iotuned, %zu ban%s of its own kept.",
                                 m->irqbalance.pid, n_want, n_want == 1 ? "" : "s", n_next - n_want,
                                 n_next - n_want == 1 ? "" : "s");
                if (n_withdrawn) {
                        _cleanup_free_ char *list = irqset_format(withdrawn, n_withdrawn);
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

/* The whole exchange, waiting for irqbalance: for the stop, after the event loop.
 * timeout_ms bounds each request (at least 1). */
static int sync_now(Manager *m, bool stopping, unsigned timeout_ms) {
        _cleanup_free_ unsigned *current = NULL;
        size_t n_current = 0;
        int r;

        assert(timeout_ms > 0);

        r = sync_begin(m, stopping);
        if (r <= 0)
                return r;
        r = irqbalance_get_banned(&m->irqbalance, timeout_ms, &current, &n_current);
        if (r < 0)
                return sync_failed(m, r);
        return sync_finish(m, stopping, current, n_current, timeout_ms);
}

/* ---- the exchange on the event loop ---------------------------------------------
 *
 * irqbalance answers from the loop that rebalances, which takes seconds when the
 * machine is busy (or emulated). While the daemon runs, nothing waits for it:
 * "setup" is sent on a socket that does not block, its answer is read when it
 * comes, and a hot-added disk, a drift check or a udev event is handled
 * meanwhile. A synchronisation asked for while one is in flight runs when that
 * one ends (with the plans of then). irqbalance's listen backlog is one
 * connection: when it is full, the connection is tried again after
 * IRQBALANCE_ASK_RETRY_MIN_USEC, twice as long each time up to
 * IRQBALANCE_ASK_RETRY_MAX_USEC (a stuck irqbalance costs a few wake-ups, not
 * ten a second). Everything ends by IRQBALANCE_ASK_TIMEOUT_USEC; then the socket
 * is reported unusable, and the next drift check asks again. */
#define IRQBALANCE_ASK_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define IRQBALANCE_ASK_RETRY_MIN_USEC (100 * 1000ULL)
#define IRQBALANCE_ASK_RETRY_MAX_USEC (2 * USEC_PER_SEC)

static void ask_close(Manager *m) {
        m->irqbalance_io = sd_event_source_disable_unref(m->irqbalance_io);
        m->irqbalance_timer = sd_event_source_disable_unref(m->irqbalance_timer);
        irqbalance_reply_done(&m->irqbalance_reply);
}

void manager_cancel_irqbalance_ask(Manager *m) {
        assert(m);

        ask_close(m);
        m->irqbalance_asking = m->irqbalance_again = false;
}

static void ask(Manager *m);

/* The exchange is over (answered, or given up): publish what changed, and run a
 * synchronisation asked for meanwhile. */
static void ask_ended(Manager *m, int r) {
        ask_close(m);
        m->irqbalance_asking = false;
        if (r == -EAGAIN) {
                /* Its "settings" found the backlog full: ask again, same deadline. */
                m->irqbalance_asking = true;
                ask(m);
                return;
        }
        if (r < 0 && r != -ENOMEM)
                sync_failed(m, r);
        if (m->irqbalance_again) {
                m->irqbalance_again = false;
                manager_sync_irqbalance(m);
        }
        if (!m->irqbalance_asking && publisher_take_dirty(m->publisher)) {
                manager_write_status(m);
                manager_notify_status(m, NULL);
        }
}

static int on_ask_reply(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        _cleanup_free_ unsigned *current = NULL;
        Manager *m = userdata;
        size_t n_current = 0;
        int r;

        assert(m);

        r = irqbalance_reply_read(fd, &m->irqbalance_reply);
        if (r == 0)
                return 0; /* more to come */
        timing_begin(0, "irqbalance");
        {
                TIMING_SCOPE(TIMING_IRQBALANCE);
                if (r > 0)
                        r = irqbalance_parse_setup(m->irqbalance_reply.text, &current, &n_current);
                ask_close(m);
                if (r >= 0)
                        r = sync_finish(m, false, current, n_current, 0);
        }
        ask_ended(m, r);
        timing_end_log();
        return 0;
}

static int on_ask_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        assert(m);

        if (m->irqbalance_io) {
                /* Connected and asked, and no answer by the deadline. */
                timing_begin(0, "irqbalance");
                ask_ended(m, -ETIMEDOUT);
                timing_end_log();
        } else
                ask(m); /* the backlog was full: try to connect again */
        return 0;
}

static void ask(Manager *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int fd, r;

        assert(m);
        assert(m->irqbalance_asking);

        ask_close(m);
        fd = irqbalance_send(&m->irqbalance, "setup", 0);
        if (fd == -EAGAIN) {
                /* The backlog is full: the connection is tried again shortly. */
                uint64_t retry = m->irqbalance_ask_retry_usec;
                if (now + retry >= m->irqbalance_ask_deadline) {
                        ask_ended(m, -ETIMEDOUT);
                        return;
                }
                m->irqbalance_ask_retry_usec = MIN(retry * 2, IRQBALANCE_ASK_RETRY_MAX_USEC);
                r = sd_event_add_time(m->event, &m->irqbalance_timer, CLOCK_MONOTONIC, now + retry, 0, on_ask_timer,
                                      m);
                if (r < 0)
                        ask_ended(m, r);
                return;
        }
        if (fd < 0) {
                ask_ended(m, fd);
                return;
        }
        r = sd_event_add_io(m->event, &m->irqbalance_io, fd, EPOLLIN, on_ask_reply, m);
        if (r < 0) {
                close(fd);
                ask_ended(m, r);
                return;
        }
        (void) sd_event_source_set_io_fd_own(m->irqbalance_io, true);
        (void) sd_event_source_set_description(m->irqbalance_io, "irqbalance-reply");
        r = sd_event_add_time(m->event, &m->irqbalance_timer, CLOCK_MONOTONIC, m->irqbalance_ask_deadline, 0,
                              on_ask_timer, m);
        if (r < 0)
                ask_ended(m, r);
}

void manager_sync_irqbalance(Manager *m) {
        TIMING_SCOPE(TIMING_IRQBALANCE);
        int r;

        assert(m);

        if (m->irqbalance_asking) {
                m->irqbalance_again = true;
                return;
        }
        r = sync_begin(m, false);
        if (r <= 0)
                return;
        m->irqbalance_asking = true;
        m->irqbalance_ask_deadline = now_usec(CLOCK_MONOTONIC) + IRQBALANCE_ASK_TIMEOUT_USEC;
        m->irqbalance_ask_retry_usec = IRQBALANCE_ASK_RETRY_MIN_USEC;
        ask(m);
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
void manager_withdraw_irqbalance_bans(Manager *m, uint64_t deadline) {
        uint64_t delay = IRQBALANCE_RETRY_MIN_USEC, now = now_usec(CLOCK_MONOTONIC);
        _cleanup_free_ unsigned *left = NULL;
        _cleanup_free_ char *cause = NULL;
        size_t n_left = 0;
        unsigned attempts = 0, failures = 0;
        bool queued = false; /* a withdrawal is on irqbalance's socket, not seen taken yet */
        int r = 0, error = 0;

        assert(m);

        /* An exchange the event loop had in flight is dropped: what it asked
         * stays in irqbalance's queue, as any request given up does. */
        manager_cancel_irqbalance_ask(m);
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
                r = sync_now(m, true, timeout_ms);
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
                        _cleanup_free_ char *list = irqset_format(m->own_bans, m->n_own_bans);
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
                (void) irqset_add(&left, &n_left, m->claimed_bans[i]);
        for (size_t i = 0; i < m->n_our_bans; i++)
                (void) irqset_add(&left, &n_left, m->our_bans[i]);
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
        irqset_sort(left, n_left);
        event_irqbalance_bans_left(queued ? LOG_NOTICE : LOG_WARNING, queued, m->irqbalance.pid,
                                   m->irqbalance.socket_path, left, n_left, attempts,
                                   error ? error : -ETIMEDOUT, cause ?: "unknown", m->bans_path);
}

