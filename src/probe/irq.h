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
} IrqName;

typedef struct IrqTable {
        IrqName *items;
        size_t n;
} IrqTable;

void irq_table_done(IrqTable *t);
/* Parse /proc/interrupts (path given for tests). Lines without a numeric IRQ
 * (NMI, LOC, ...) are skipped. */
int irq_table_load(const char *path, IrqTable *ret);
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
