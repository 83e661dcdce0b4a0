/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "device.h"

/* The interrupt vectors of the PCI function behind a disk, found from sysfs
 * (<pci function>/msi_irqs/, or its legacy `irq`), named from /proc/interrupts
 * (drivers/nvme/host/pci.c names them nvme<ctrl>q<qid>; virtio_pci
 * virtio<N>-req.<q>; ahci ahci[<pci address>]). */
typedef struct IrqName {
        unsigned irq;
        char *name;     /* the action name(s), e.g. "nvme0q1" */
        size_t order;   /* row in the file */
} IrqName;

/* Bounds on what /proc/interrupts may hold. IRQ numbers are below
 * IRQ_BITMAP_BITS (NR_IRQS + 8196 on x86, kernel/irq/internal.h), far below 2^24;
 * a larger number is not a real row and is skipped, so it never wraps to another
 * IRQ or to a negative int in the plan. The CPU count matches the largest
 * NR_CPUS distributions build with. A line holds one count per CPU. */
#define IRQ_NUMBER_MAX ((1u << 24) - 1)
#define IRQ_TABLE_CPU_MAX 8192
#define IRQ_TABLE_LINE_MAX (IRQ_TABLE_CPU_MAX * 12 + 4096)
#define IRQ_TABLE_FILE_MAX (16u << 20)

typedef struct IrqTable {
        IrqName *items;
        size_t n;
} IrqTable;

void irq_table_done(IrqTable *t);
/* Parse /proc/interrupts (path given for tests). Lines without a numeric IRQ
 * (NMI, LOC, ...) are skipped. */
int irq_table_load(const char *path, IrqTable *ret);
/* The same from the text (modified in place). Linear in its size; rows out of
 * range, overlong lines and repeated IRQs are skipped (debug note); -E2BIG for a
 * header of more than IRQ_TABLE_CPU_MAX CPUs. */
int irq_table_parse(char *text, IrqTable *ret);
const char *irq_table_name(const IrqTable *t, unsigned irq);

typedef enum IrqManaged {
        IRQ_MANAGED_NO,        /* expected to accept affinity writes */
        IRQ_MANAGED_PREDICTED, /* a driver that uses managed affinity for this vector */
} IrqManaged;

typedef struct IrqVector {
        unsigned irq;
        char *name;          /* NULL if /proc/interrupts does not list it */
        int queue;           /* blk-mq hardware queue it serves, -1 if none (admin, config, AHCI) */
        IrqManaged managed;
} IrqVector;

typedef struct IrqVectors {
        char *pci_dir;       /* the owning PCI function's sysfs directory, NULL if none */
        IrqVector *items;
        size_t n;
} IrqVectors;

void irq_vectors_done(IrqVectors *v);

/* The PCI function of a sysfs path: the deepest component that is a PCI address.
 * -ENODEV if there is none (virtual, nvme-tcp). */
int pci_function_of(const char *syspath, char **ret);

/* An empty result (no msi_irqs, no irq) means "no IRQs known"; never an error. */
int device_irq_vectors(const Device *d, const IrqTable *t, IrqVectors *ret);

/* From a vector's name: the hardware queue (or -1) and whether the driver manages it. */
void irq_classify(const char *name, int *ret_queue, IrqManaged *ret_managed);
