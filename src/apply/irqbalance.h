/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

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

/* The IRQs irqbalance currently keeps its hands off, sorted. */
int irqbalance_get_banned(const IrqBalance *b, unsigned **ret, size_t *ret_n);

/* Replace the banned list. */
int irqbalance_set_banned(const IrqBalance *b, const unsigned *irqs, size_t n);

/* For tests: parse a "setup" reply. */
int irqbalance_parse_setup(const char *reply, unsigned **ret, size_t *ret_n);
