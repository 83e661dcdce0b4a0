/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "backoff.h"
#include "irqbalance.h"
#include "macro.h"

/* The irqbalance exchange and ban policy: the vectors iotuned pins are banned
 * at runtime through irqbalance's socket, irqbalance's own bans are kept, and
 * what may be iotuned's is on a record (IRQBALANCE_BANS_RECORD, in the run
 * directory) until seen withdrawn. While the loop runs, the exchange runs on it
 * and nothing waits for irqbalance; at stop, the withdrawal waits (within a
 * deadline). Owned by the Manager, which says which vectors to ban (ops). */
typedef struct BanKeeper BanKeeper;

/* At stop, withdrawing the irqbalance bans is retried until this long after
 * SIGTERM. */
#define IRQBALANCE_STOP_BUDGET_USEC (8 * USEC_PER_SEC)

typedef struct BanKeeperOps {
        /* The vectors to ban now (a set of irqset.h: no duplicates): 0, or -ENOMEM.
         * Asked at each synchronisation and again when irqbalance answers. */
        int (*wanted)(void *userdata, unsigned **ret, size_t *ret_n);
        /* What status.json shows of irqbalance changed (optional). */
        void (*state_changed)(void *userdata);
        /* An exchange on the loop ended and none is in flight (optional). */
        void (*idle)(void *userdata);
} BanKeeperOps;

/* root: where irqbalance and the run directory are (the Tuner's, "" for the
 * real system). ops (borrowed, with userdata) must outlive the BanKeeper. */
int bankeeper_new(sd_event *event, const char *root, const BanKeeperOps *ops, void *userdata, BanKeeper **ret);
BanKeeper *bankeeper_free(BanKeeper *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(BanKeeper *, bankeeper_free);

/* At start: the record an earlier run left, if any (what it may have left
 * banned, withdrawn at the first synchronisation). */
void bankeeper_load_record(BanKeeper *k);
/* Bring irqbalance's bans in line with ops->wanted, without waiting for it: the
 * exchange runs on the event loop (one asked for while one is in flight runs
 * after it), and ops->idle follows its end. */
void bankeeper_sync(BanKeeper *k);
/* Drop an exchange in flight (at stop, before the withdrawal; at exit). */
void bankeeper_cancel(BanKeeper *k);
/* At stop: withdraw our bans, waiting for irqbalance to show them gone until
 * `deadline` (CLOCK_MONOTONIC); what may be left is logged and recorded. */
void bankeeper_withdraw(BanKeeper *k, uint64_t deadline);

/* For status.json: irqbalance's pid (0: none), the state in words (NULL: not
 * known yet), and the IRQs banned for iotuned. */
int bankeeper_pid(const BanKeeper *k);
const char *bankeeper_state(const BanKeeper *k);
const unsigned *bankeeper_banned(const BanKeeper *k, size_t *ret_n);
