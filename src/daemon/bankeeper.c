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

#include "bankeeper.h"
#include "events.h"
#include "irqset.h"
#include "log.h"
#include "rootfs.h"
#include "timing.h"
#include "util.h"

struct BanKeeper {
        sd_event *event;
        char *root;                      /* where irqbalance is looked for: the Tuner's */
        const BanKeeperOps *ops;
        void *userdata;

        IrqBalance irqbalance;
        unsigned *our_bans;              /* what the last exchange banned for iotuned */
        size_t n_our_bans;
        char *state;                     /* for status.json: "pid 812: 4 IRQs banned by iotuned" */
        int last_pid;                    /* survives "gone", to recognise a restart */
        uint64_t synced_usec;            /* CLOCK_MONOTONIC of the last exchange that succeeded */
        /* The exchange the event loop has in flight: its answer to come, or a
         * connection to try again; another asked for meanwhile (again). */
        bool asking, again;
        sd_event_source *io, *timer;
        IrqBalanceReply reply;
        uint64_t ask_deadline;           /* CLOCK_MONOTONIC */
        uint64_t ask_retry_usec;         /* the next wait for a full backlog */
        /* The IRQs that may be banned by iotuned in irqbalance `claimed_pid`: what it
         * sent and no "setup" reply has shown withdrawn yet, a superset of our_bans.
         * Kept in bans_path (IRQBALANCE_BANS_RECORD), so that a later start can
         * withdraw what a stop could not; loaded from there at start. */
        char *bans_path;
        unsigned *claimed_bans;
        size_t n_claimed_bans;
        int claimed_pid;
        bool claims_saved;               /* bans_path says what claimed_* say */
        unsigned *leftover_bans;         /* the record of an earlier run, until its first exchange */
        size_t n_leftover_bans;
        unsigned *own_bans;              /* irqbalance's own bans in its last reply (its pid unchanged) */
        size_t n_own_bans;
        bool own_bans_known;
};

int bankeeper_new(sd_event *event, const char *root, const BanKeeperOps *ops, void *userdata, BanKeeper **ret) {
        _cleanup_(bankeeper_freep) BanKeeper *k = NULL;
        int r;

        assert(event);
        assert(root);
        assert(ops);
        assert(ops->wanted);
        assert(ret);

        k = calloc(1, sizeof(BanKeeper));
        if (!k)
                return -ENOMEM;
        k->event = sd_event_ref(event);
        k->ops = ops;
        k->userdata = userdata;
        k->root = strdup(root);
        if (!k->root)
                return -ENOMEM;
        /* Under --root: resolved inside the root (rootfs.h), as the Tuner's paths. */
        r = root_resolve(k->root, IOTUNED_RUN_DIR "/" IRQBALANCE_BANS_RECORD, &k->bans_path);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(k);
        return 0;
}

BanKeeper *bankeeper_free(BanKeeper *k) {
        if (!k)
                return NULL;
        bankeeper_cancel(k);
        sd_event_unref(k->event);
        irqbalance_done(&k->irqbalance);
        free(k->our_bans);
        free(k->claimed_bans);
        free(k->leftover_bans);
        free(k->own_bans);
        free(k->bans_path);
        free(k->state);
        free(k->root);
        free(k);
        return NULL;
}

int bankeeper_pid(const BanKeeper *k) {
        assert(k);

        return k->irqbalance.pid;
}

const char *bankeeper_state(const BanKeeper *k) {
        assert(k);

        return k->state;
}

const unsigned *bankeeper_banned(const BanKeeper *k, size_t *ret_n) {
        assert(k);
        assert(ret_n);

        *ret_n = k->n_our_bans;
        return k->our_bans;
}

static void set_irqbalance_state(BanKeeper *k, const char *fmt, ...) _printf_(2, 3);
static void set_irqbalance_state(BanKeeper *k, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;

        assert(k);
        assert(fmt);

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!streq_ptr(s, k->state))
                if (k->ops->state_changed) /* the next drift check rewrites status.json */
                        k->ops->state_changed(k->userdata);
        free(k->state);
        k->state = s;
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
static void set_claims(BanKeeper *k, int pid, const unsigned *irqs, size_t n) {
        unsigned *copy = NULL;
        int r;

        assert(k);

        if (n == 0)
                pid = 0;
        if (k->claims_saved && pid == k->claimed_pid && irqset_equal(irqs, n, k->claimed_bans, k->n_claimed_bans))
                return;
        if (irqset_copy(irqs, n, &copy) < 0) {
                log_oom();
                return;
        }
        free(k->claimed_bans);
        k->claimed_bans = copy;
        k->n_claimed_bans = n;
        k->claimed_pid = pid;
        r = irqbalance_bans_save(k->bans_path, pid, irqs, n);
        k->claims_saved = r >= 0;
        if (r < 0)
                log_warning_errno(r, "Cannot record the irqbalance bans of iotuned in %s: %m", k->bans_path);
}

static void forget_leftovers(BanKeeper *k) {
        assert(k);

        free(k->leftover_bans);
        k->leftover_bans = NULL;
        k->n_leftover_bans = 0;
}

static void forget_own_bans(BanKeeper *k) {
        assert(k);

        free(k->own_bans);
        k->own_bans = NULL;
        k->n_own_bans = 0;
        k->own_bans_known = false;
}

/* The record an earlier run left, if any: what it may have left banned. Invalid
 * records (not a regular file, too big, not the format) are removed. */
void bankeeper_load_record(BanKeeper *k) {
        _cleanup_free_ unsigned *irqs = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0;
        int pid = 0, r;

        assert(k);

        r = irqbalance_bans_load(k->bans_path, &pid, &irqs, &n);
        if (r == -ENOENT) {
                k->claims_saved = true;
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "Ignoring and removing %s, which is not a valid record of irqbalance bans: %m",
                                  k->bans_path);
                k->claims_saved = unlink(k->bans_path) >= 0 || errno == ENOENT;
                return;
        }
        free(k->claimed_bans);
        k->claimed_bans = TAKE_PTR(irqs);
        k->n_claimed_bans = n;
        k->claimed_pid = n ? pid : 0;
        k->claims_saved = true;
        if (n == 0) {
                set_claims(k, 0, NULL, 0); /* an empty record: remove it */
                return;
        }
        if (irqset_copy(k->claimed_bans, n, &k->leftover_bans) < 0) {
                log_oom();
                return;
        }
        k->n_leftover_bans = n;
        list = irqset_format(k->claimed_bans, n);
        log_info("%s: an earlier run of iotuned may have left IRQ%s %s banned in irqbalance (pid %d); withdrawing "
                 "what the configuration does not ban now.",
                 k->bans_path, n == 1 ? "" : "s", list ?: "?", pid);
}

/* The vectors we ban: the owner's (ops->wanted), none when stopping. */
static int wanted_bans(const BanKeeper *k, bool stopping, unsigned **ret, size_t *ret_n) {
        if (stopping) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        return k->ops->wanted(k->userdata, ret, ret_n);
}

static int sync_failed(BanKeeper *k, int error) {
        set_irqbalance_state(k, "socket %s unusable (%s): IRQs are verified and re-asserted only",
                             k->irqbalance.socket_path, strerror(-error));
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
 * ask k->irqbalance), sync_finish() takes the answer and sends what is to change.
 * Both return 0 when irqbalance is in the state we want, as its reply has just
 * shown (or it is gone, and our bans with it), 1 when a change was sent (to be
 * seen in a later reply), or a negative errno when irqbalance could not be asked
 * or told. */
static int sync_begin(BanKeeper *k, bool stopping) {
        _cleanup_free_ unsigned *want = NULL;
        size_t n_want = 0;
        IrqBalance b = {};
        int r;

        assert(k);

        if (wanted_bans(k, stopping, &want, &n_want) < 0)
                return log_oom();
        r = irqbalance_find(k->root, &b);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                if (k->irqbalance.pid)
                        log_info(stopping ? "irqbalance (pid %d) is gone, and its runtime bans with it."
                                          : "irqbalance (pid %d) is gone; nothing to ban.",
                                 k->irqbalance.pid);
                else if (k->claimed_pid)
                        log_info("irqbalance (pid %d) is gone, and with it the bans iotuned left there.",
                                 k->claimed_pid);
                irqbalance_done(&k->irqbalance);
                k->n_our_bans = 0;
                forget_own_bans(k);
                forget_leftovers(k);
                set_claims(k, 0, NULL, 0);
                set_irqbalance_state(k, "not running");
                return 0;
        }
        if (k->claimed_pid && k->claimed_pid != b.pid) {
                /* Bans live in the irqbalance process: another one has none of ours. */
                if (k->n_leftover_bans)
                        log_info("irqbalance pid %d, where an earlier run of iotuned left bans, is gone (now pid %d): "
                                 "those bans went with it.",
                                 k->claimed_pid, b.pid);
                forget_leftovers(k);
                set_claims(k, 0, NULL, 0);
        }
        if (b.pid != k->irqbalance.pid) {
                if (k->last_pid && k->last_pid != b.pid)
                        log_info(stopping ? "irqbalance restarted (pid %d -> %d): its runtime bans, ours included, are "
                                            "gone."
                                          : "irqbalance restarted (pid %d -> %d): its runtime bans are gone; "
                                            "re-sending ours.",
                                 k->last_pid, b.pid);
                k->n_our_bans = 0;
                forget_own_bans(k);
        }
        if (stopping && k->n_our_bans == 0 && k->n_claimed_bans == 0) {
                /* Nothing of ours can be banned there: no need to ask. */
                irqbalance_done(&b);
                return 0;
        }
        /* With nothing of ours to ban, banned or claimed, the periodic recheck has
         * nothing to verify: an idle daemon that pins no vector does not wake
         * irqbalance (or itself) every IRQBALANCE_RECHECK_USEC. */
        bool nothing_ours = n_want == 0 && k->n_our_bans == 0 && k->n_claimed_bans == 0;
        if (!stopping && b.pid == k->irqbalance.pid && k->synced_usec &&
            (nothing_ours || now_usec(CLOCK_MONOTONIC) - k->synced_usec < IRQBALANCE_RECHECK_USEC) &&
            k->n_leftover_bans == 0 && irqset_equal(want, n_want, k->our_bans, k->n_our_bans)) {
                /* Bans withdrawn but not seen withdrawn yet (claimed_bans) wait for the
                 * next exchange; at the latest the recheck, or the stop, sees them. */
                irqbalance_done(&b);
                return 0;
        }
        k->last_pid = b.pid;
        irqbalance_done(&k->irqbalance);
        k->irqbalance = b;
        k->synced_usec = 0;
        return 1;
}

/* current: the bans in irqbalance's answer to "setup". send_timeout_ms bounds the
 * send of a change (0: it does not wait; -EAGAIN when irqbalance's backlog is
 * full). The vectors to ban are those of the plans now. */
static int sync_finish(BanKeeper *k, bool stopping, const unsigned *current, size_t n_current,
                       unsigned send_timeout_ms) {
        _cleanup_free_ unsigned *want = NULL, *own = NULL, *next = NULL, *claim = NULL, *withdrawn = NULL;
        size_t n_want = 0, n_own = 0, n_next = 0, n_claim = 0, n_withdrawn = 0;
        bool same;
        int r;

        assert(k);

        if (wanted_bans(k, stopping, &want, &n_want) < 0)
                return log_oom();
        for (size_t i = 0; i < n_current; i++) {
                unsigned irq = current[i];
                bool ours =
                        irqset_contains(k->our_bans, k->n_our_bans, irq) || irqset_contains(k->claimed_bans, k->n_claimed_bans, irq);
                if (!ours && (irqset_add(&own, &n_own, irq) < 0 || irqset_add(&next, &n_next, irq) < 0))
                        return log_oom();
                /* What may stay ours if this send does not land: it goes on the record first. */
                if (ours && irqset_add(&claim, &n_claim, irq) < 0)
                        return log_oom();
                if (irqset_contains(k->leftover_bans, k->n_leftover_bans, irq) && !irqset_contains(want, n_want, irq) &&
                    irqset_add(&withdrawn, &n_withdrawn, irq) < 0)
                        return log_oom();
        }
        for (size_t i = 0; i < n_want; i++)
                if (irqset_add(&next, &n_next, want[i]) < 0 || irqset_add(&claim, &n_claim, want[i]) < 0)
                        return log_oom();
        /* Kept for a stop at which irqbalance does not answer (see below). */
        free(k->own_bans);
        k->own_bans = TAKE_PTR(own);
        k->n_own_bans = n_own;
        k->own_bans_known = true;
        same = irqset_equal(next, n_next, current, n_current);
        if (same)
                /* The reply shows every ban of ours that is left is still wanted. */
                set_claims(k, k->irqbalance.pid, want, n_want);
        else {
                set_claims(k, k->irqbalance.pid, claim, n_claim);
                r = irqbalance_set_banned(&k->irqbalance, send_timeout_ms, next, n_next);
                if (r == -EAGAIN)
                        return r; /* not sent: the caller asks again */
                if (r < 0)
                        return sync_failed(k, r);
                if (stopping)
                        log_info("irqbalance (pid %d): withdrawing %zu ban%s of iotuned, %zu ban%s of its own kept.",
                                 k->irqbalance.pid, n_claim, n_claim == 1 ? "" : "s", n_next, n_next == 1 ? "" : "s");
                else
                        log_info("irqbalance (pid %d): %zu IRQ%s banned by iotuned, %zu ban%s of its own kept.",
                                 k->irqbalance.pid, n_want, n_want == 1 ? "" : "s", n_next - n_want,
                                 n_next - n_want == 1 ? "" : "s");
                if (n_withdrawn) {
                        _cleanup_free_ char *list = irqset_format(withdrawn, n_withdrawn);
                        log_info("withdrew %zu leftover irqbalance ban%s from an earlier run: IRQ%s %s (irqbalance "
                                 "pid %d).",
                                 n_withdrawn, n_withdrawn == 1 ? "" : "s", n_withdrawn == 1 ? "" : "s", list ?: "?",
                                 k->irqbalance.pid);
                }
        }
        forget_leftovers(k);
        free(k->our_bans);
        k->our_bans = TAKE_PTR(want);
        k->n_our_bans = n_want;
        k->synced_usec = now_usec(CLOCK_MONOTONIC);
        set_irqbalance_state(k, "pid %d: %zu IRQ%s banned by iotuned", k->irqbalance.pid, k->n_our_bans,
                             k->n_our_bans == 1 ? "" : "s");
        return same ? 0 : 1;
}

/* The whole exchange, waiting for irqbalance: for the stop, after the event loop.
 * timeout_ms bounds each request (at least 1). */
static int sync_now(BanKeeper *k, bool stopping, unsigned timeout_ms) {
        _cleanup_free_ unsigned *current = NULL;
        size_t n_current = 0;
        int r;

        assert(timeout_ms > 0);

        r = sync_begin(k, stopping);
        if (r <= 0)
                return r;
        r = irqbalance_get_banned(&k->irqbalance, timeout_ms, &current, &n_current);
        if (r < 0)
                return sync_failed(k, r);
        return sync_finish(k, stopping, current, n_current, timeout_ms);
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

static void ask_close(BanKeeper *k) {
        k->io = sd_event_source_disable_unref(k->io);
        k->timer = sd_event_source_disable_unref(k->timer);
        irqbalance_reply_done(&k->reply);
}

void bankeeper_cancel(BanKeeper *k) {
        assert(k);

        ask_close(k);
        k->asking = k->again = false;
}

static void ask(BanKeeper *k);

/* The exchange is over (answered, or given up): publish what changed, and run a
 * synchronisation asked for meanwhile. */
static void ask_ended(BanKeeper *k, int r) {
        ask_close(k);
        k->asking = false;
        if (r == -EAGAIN) {
                /* Its "settings" found the backlog full: ask again, same deadline. */
                k->asking = true;
                ask(k);
                return;
        }
        if (r < 0 && r != -ENOMEM)
                sync_failed(k, r);
        if (k->again) {
                k->again = false;
                bankeeper_sync(k);
        }
        if (!k->asking && k->ops->idle)
                k->ops->idle(k->userdata);
}

static int on_ask_reply(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        _cleanup_free_ unsigned *current = NULL;
        BanKeeper *k = userdata;
        size_t n_current = 0;
        int r;

        assert(k);

        r = irqbalance_reply_read(fd, &k->reply);
        if (r == 0)
                return 0; /* more to come */
        timing_begin(0, "irqbalance");
        {
                TIMING_SCOPE(TIMING_IRQBALANCE);
                if (r > 0)
                        r = irqbalance_parse_setup(k->reply.text, &current, &n_current);
                ask_close(k);
                if (r >= 0)
                        r = sync_finish(k, false, current, n_current, 0);
        }
        ask_ended(k, r);
        timing_end_log();
        return 0;
}

static int on_ask_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        BanKeeper *k = userdata;

        assert(k);

        if (k->io) {
                /* Connected and asked, and no answer by the deadline. */
                timing_begin(0, "irqbalance");
                ask_ended(k, -ETIMEDOUT);
                timing_end_log();
        } else
                ask(k); /* the backlog was full: try to connect again */
        return 0;
}

static void ask(BanKeeper *k) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int fd, r;

        assert(k);
        assert(k->asking);

        ask_close(k);
        fd = irqbalance_send(&k->irqbalance, "setup", 0);
        if (fd == -EAGAIN) {
                /* The backlog is full: the connection is tried again shortly. */
                uint64_t retry = k->ask_retry_usec;
                if (now + retry >= k->ask_deadline) {
                        ask_ended(k, -ETIMEDOUT);
                        return;
                }
                k->ask_retry_usec = MIN(retry * 2, IRQBALANCE_ASK_RETRY_MAX_USEC);
                r = sd_event_add_time(k->event, &k->timer, CLOCK_MONOTONIC, now + retry, 0, on_ask_timer,
                                      k);
                if (r < 0)
                        ask_ended(k, r);
                return;
        }
        if (fd < 0) {
                ask_ended(k, fd);
                return;
        }
        r = sd_event_add_io(k->event, &k->io, fd, EPOLLIN, on_ask_reply, k);
        if (r < 0) {
                close(fd);
                ask_ended(k, r);
                return;
        }
        (void) sd_event_source_set_io_fd_own(k->io, true);
        (void) sd_event_source_set_description(k->io, "irqbalance-reply");
        r = sd_event_add_time(k->event, &k->timer, CLOCK_MONOTONIC, k->ask_deadline, 0,
                              on_ask_timer, k);
        if (r < 0)
                ask_ended(k, r);
}

void bankeeper_sync(BanKeeper *k) {
        TIMING_SCOPE(TIMING_IRQBALANCE);
        int r;

        assert(k);

        if (k->asking) {
                k->again = true;
                return;
        }
        r = sync_begin(k, false);
        if (r <= 0)
                return;
        k->asking = true;
        k->ask_deadline = now_usec(CLOCK_MONOTONIC) + IRQBALANCE_ASK_TIMEOUT_USEC;
        k->ask_retry_usec = IRQBALANCE_ASK_RETRY_MIN_USEC;
        ask(k);
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
void bankeeper_withdraw(BanKeeper *k, uint64_t deadline) {
        uint64_t delay = IRQBALANCE_RETRY_MIN_USEC, now = now_usec(CLOCK_MONOTONIC);
        _cleanup_free_ unsigned *left = NULL;
        _cleanup_free_ char *cause = NULL;
        size_t n_left = 0;
        unsigned attempts = 0, failures = 0;
        bool queued = false; /* a withdrawal is on irqbalance's socket, not seen taken yet */
        int r = 0, error = 0;

        assert(k);

        /* An exchange the event loop had in flight is dropped: what it asked
         * stays in irqbalance's queue, as any request given up does. */
        bankeeper_cancel(k);
        if (k->n_our_bans == 0 && k->n_claimed_bans == 0)
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
                pid = k->irqbalance.pid;
                r = sync_now(k, true, timeout_ms);
                if (r == 0) {
                        if (failures > 0)
                                log_info("The irqbalance bans of iotuned are withdrawn, after %u failed attempt%s.",
                                         failures, failures == 1 ? "" : "s");
                        return;
                }
                if (r == -ENOMEM)
                        break;
                if (k->irqbalance.pid != pid)
                        queued = false; /* another irqbalance: what we queued went with the old one */
                (void) sd_notify(false, "WATCHDOG=1");
                if (r > 0) {
                        queued = true;
                        continue; /* sent: see at once whether it was taken */
                }
                error = r;
                failures++;
                log_debug_errno(r, "Withdrawing the irqbalance bans failed (attempt %u): %m", attempts);
                if (r == -ETIMEDOUT && !queued && k->own_bans_known) {
                        _cleanup_free_ char *list = irqset_format(k->own_bans, k->n_own_bans);
                        int q;

                        now = now_usec(CLOCK_MONOTONIC);
                        left_ms = deadline > now ? (deadline - now) / 1000 : 0;
                        q = irqbalance_set_banned(&k->irqbalance,
                                                  (unsigned) MAX(MIN(left_ms, (uint64_t) IRQBALANCE_TIMEOUT_MS),
                                                                 (uint64_t) IRQBALANCE_TRY_MIN_MS),
                                                  k->own_bans, k->n_own_bans);
                        if (q >= 0) {
                                queued = true;
                                log_info("irqbalance (pid %d) did not answer in time: withdrawing the bans of iotuned "
                                         "from the list it gave last, keeping its own (%s).",
                                         k->irqbalance.pid, k->n_own_bans ? list ?: "?" : "none");
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

        for (size_t i = 0; i < k->n_claimed_bans; i++)
                (void) irqset_add(&left, &n_left, k->claimed_bans[i]);
        for (size_t i = 0; i < k->n_our_bans; i++)
                (void) irqset_add(&left, &n_left, k->our_bans[i]);
        if (n_left == 0)
                return;
        if (!k->claims_saved || k->claimed_pid != k->irqbalance.pid)
                set_claims(k, k->irqbalance.pid, left, n_left);
        if (queued)
                (void) asprintf_safe(&cause, "the withdrawal is queued on %s, but irqbalance did not answer before "
                                             "the deadline (%s); it takes effect when irqbalance reads it",
                                     k->irqbalance.socket_path, strerror(error ? -error : ETIMEDOUT));
        else if (error == -ETIMEDOUT)
                (void) asprintf_safe(&cause, "irqbalance did not take or answer a request on %s in time (%s)",
                                     k->irqbalance.socket_path, strerror(-error));
        else
                (void) asprintf_safe(&cause, "its socket %s is unusable (%s)", k->irqbalance.socket_path,
                                     strerror(error ? -error : ENOMEM));
        irqset_sort(left, n_left);
        event_irqbalance_bans_left(queued ? LOG_NOTICE : LOG_WARNING, queued, k->irqbalance.pid,
                                   k->irqbalance.socket_path, left, n_left, attempts,
                                   error ? error : -ETIMEDOUT, cause ?: "unknown", k->bans_path);
}

