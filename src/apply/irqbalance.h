/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* How long a request waits for irqbalance: to connect (its listen backlog is one
 * connection), to send, and for the whole reply. */
#define IRQBALANCE_TIMEOUT_MS 2000u

/* iotuned's record of the bans it sent, under its run directory: which IRQs may
 * be banned by iotuned in which irqbalance process (see iotuned(8), IRQBALANCE). */
#define IRQBALANCE_BANS_RECORD "irqbalance-bans.json"
/* Limits a record must keep: it is read back as untrusted input. */
#define IRQBALANCE_BANS_RECORD_MAX (64u * 1024u)
#define IRQBALANCE_BANS_MAX 4096u
#define IRQBALANCE_IRQ_MAX ((1u << 24) - 1) /* far above any kernel's IRQ_BITMAP_BITS */
#define IRQBALANCE_PID_MAX (1 << 22)        /* PID_MAX_LIMIT */

/* irqbalance's runtime control socket, /run/irqbalance/irqbalance<PID>.sock
 * (irqbalance 1.8+). One command per connection; the sender must pass
 * SCM_CREDENTIALS with uid 0. "setup" answers "SLEEP n IRQ a LOAD .. DIFF ..
 * CLASS .. ... BANNED <cpumask>"; "settings ban irqs a b ..." REPLACES the whole
 * list of banned IRQs (including --banirq ones), "NONE" empties it. Runtime
 * bans are lost when irqbalance restarts. */
typedef struct IrqBalance {
        int pid;
        char *socket_path;
} IrqBalance;

void irqbalance_done(IrqBalance *b);

/* -ENOENT: no irqbalance socket (not running, or too old for one). */
int irqbalance_find(const char *root, IrqBalance *ret);

/* The IRQs irqbalance currently keeps its hands off, sorted. timeout_ms bounds the
 * whole exchange (0: IRQBALANCE_TIMEOUT_MS); -ETIMEDOUT when irqbalance does not
 * accept, take or answer the request in time. */
int irqbalance_get_banned(const IrqBalance *b, unsigned timeout_ms, unsigned **ret, size_t *ret_n);

/* Replace the banned list. irqbalance sends no reply: success means the command
 * was handed to its socket, not that it was applied; a later "setup" shows that.
 * timeout_ms bounds connecting and sending as irqbalance_send()'s does: 0 does
 * not wait (-EAGAIN when irqbalance's listen backlog is full). */
int irqbalance_set_banned(const IrqBalance *b, unsigned timeout_ms, const unsigned *irqs, size_t n);

/* The exchange in pieces, for a caller that waits on its own event loop. */
/* Connect to irqbalance's socket and send cmd; returns the connected socket. With
 * timeout_ms, connecting and sending wait at most that long (-ETIMEDOUT); with 0,
 * the socket does not block, and irqbalance's listen backlog being full (it has
 * not taken the connections before ours) is -EAGAIN at once. */
int irqbalance_send(const IrqBalance *b, const char *cmd, unsigned timeout_ms);

/* A reply being read: at most IRQBALANCE_REPLY_MAX bytes are kept. */
#define IRQBALANCE_REPLY_MAX 8191u
typedef struct IrqBalanceReply {
        char *text; /* NUL-terminated once complete */
        size_t len;
} IrqBalanceReply;
void irqbalance_reply_done(IrqBalanceReply *reply);
/* Read what has come on fd, without waiting: 1 when the reply is complete
 * (irqbalance closed the connection, or the limit was reached), 0 when more may
 * come, a negative errno on failure. */
int irqbalance_reply_read(int fd, IrqBalanceReply *reply);

/* For tests: parse a "setup" reply. */
int irqbalance_parse_setup(const char *reply, unsigned **ret, size_t *ret_n);

/* The record: {"version": 1, "irqbalance_pid": PID, "irqs": [IRQ, ...]}.
 * Parsing checks everything (an object, version 1, a PID and IRQ numbers in range,
 * at most IRQBALANCE_BANS_MAX of them, nothing after the object); unknown keys
 * are ignored. The IRQs come back sorted, without duplicates. -EBADMSG when the
 * text is not such a record. */
int irqbalance_bans_parse(const char *text, int *ret_pid, unsigned **ret_irqs, size_t *ret_n);
int irqbalance_bans_format(int pid, const unsigned *irqs, size_t n, char **ret);
/* Read a record with read_regular_file(): -ENOENT when there is none, -ELOOP, -EISDIR,
 * -EBADFD, -EFBIG, -EBADMSG for one that is not a regular file of a valid record. */
int irqbalance_bans_load(const char *path, int *ret_pid, unsigned **ret_irqs, size_t *ret_n);
/* Replace the record atomically (a temporary created with O_EXCL next to it, then
 * renamed over it); with n == 0 remove it (0 when it did not exist). */
int irqbalance_bans_save(const char *path, int pid, const unsigned *irqs, size_t n);
