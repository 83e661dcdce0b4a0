/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "irq.h"

/* The per-CPU interrupt counts of /proc/interrupts (kernel/irq/proc.c
 * show_interrupts), for the numeric rows: what two samples of them say about
 * where a disk's completions land is in src/diagnose/signals.c.
 *
 * The kernel keeps each count as an unsigned int per CPU (struct irqstat in
 * include/linux/irqdesc.h), so a real count wraps at 2^32; a count that does not
 * fit 64 bits is garbage and rejects its row. */
typedef struct IrqCount {
        unsigned irq;
        uint64_t *per_cpu; /* n_cpus entries, in the order of IrqCounts.cpu_ids */
} IrqCount;

typedef struct IrqCounts {
        unsigned n_cpus;
        int *cpu_ids;    /* the header "CPU0 CPU1 CPU5": the CPU number of each column, ascending */
        IrqCount *items; /* sorted by irq, each irq once */
        size_t n;
        uint64_t sampled_usec; /* CLOCK_MONOTONIC when read (irq_counts_load); 0 from irq_counts_parse */
        uint64_t *storage;     /* all rows' counts, one block (items[].per_cpu point into it) */
} IrqCounts;

/* Parse the text of /proc/interrupts (not modified). Only the rows of the IRQs in
 * `irqs` are kept (n_irqs == 0: every numeric row). Rules, for hostile input:
 *  - The header holds one "CPU<n>" per online CPU, and offline CPUs are omitted
 *    ("CPU0 CPU2"): each column gets its CPU number. The CPU numbers must be
 *    ascending and below IRQ_TABLE_CPU_MAX, else -EBADMSG; more than
 *    IRQ_TABLE_CPU_MAX columns is -E2BIG; no header at all is -EBADMSG. A second
 *    header is skipped.
 *  - A row is "<irq>:" and one unsigned decimal count per header column. A row
 *    with fewer counts than the header has is skipped: its columns cannot be told
 *    apart (a CPU went on- or offline between the header and the row, or the text
 *    is not the kernel's). Anything after the last column (chip, names) is ignored.
 *  - Skipped too: rows before the header, non-numeric rows (NMI, LOC, ...), IRQ
 *    numbers above IRQ_NUMBER_MAX or with leading zeros, counts that overflow 64
 *    bits or run into letters, lines longer than IRQ_TABLE_LINE_MAX, and the later
 *    rows of a repeated IRQ.
 * Linear in the size of the text; the counts are one allocation of
 * rows * columns * 8 bytes. -ENOMEM. */
int irq_counts_parse(const char *text, const unsigned *irqs, size_t n_irqs, IrqCounts *ret);

/* Read `path` (/proc/interrupts; a regular file of at most IRQ_TABLE_FILE_MAX
 * bytes, opened with O_NONBLOCK: a FIFO is -EBADFD, never a blocked read), parse
 * it, and stamp it with CLOCK_MONOTONIC. */
int irq_counts_load(const char *path, const unsigned *irqs, size_t n_irqs, IrqCounts *ret);

void irq_counts_done(IrqCounts *c);

/* The row of `irq`, or NULL. */
const IrqCount *irq_counts_find(const IrqCounts *c, unsigned irq);

/* The column of CPU `cpu`, or -ENOENT when the header does not list it (offline). */
int irq_counts_column(const IrqCounts *c, int cpu);
