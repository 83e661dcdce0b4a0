/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libnvme.h>

#include "device.h"
#include "nvme-command.h"

/* The NVMe features iotuned tunes, as values and command words. Pure functions: the
 * unit tests check every word sent against the NVMe Base Specification (2.0,
 * 5.27.1), because libnvme 1.3's dedicated helpers for these two features send
 * the wrong ones (fixed in libnvme 1.6). The argument blocks of the generic
 * Get/Set Features calls are in nvme-command.h (probe). Feature IDs per FACTS.md:
 * 0x07 Number of Queues, 0x08 Interrupt Coalescing, 0x0C Autonomous Power State
 * Transition. */

/* Interrupt Coalescing (FID 0x08). cdw11 bits 7:0 THR (aggregation threshold, a
 * 0's based count of completion entries), bits 15:8 TIME (aggregation time in
 * 100 us units, 0 = no delay). Applies to I/O completion queues only. */
#define NVME_COALESCING_TIME_UNIT_US 100u
#define NVME_COALESCING_THRESHOLD_MAX 256u                         /* entries: THR 0xff */
#define NVME_COALESCING_TIME_MAX_US (255u * NVME_COALESCING_TIME_UNIT_US)

typedef struct NvmeCoalescing {
        unsigned threshold; /* completion entries, 1..256 (THR + 1) */
        unsigned time_us;   /* 0..25500, a multiple of 100 */
} NvmeCoalescing;

uint32_t nvme_coalescing_to_cdw11(const NvmeCoalescing *c);
void nvme_coalescing_from_dw(uint32_t dw, NvmeCoalescing *ret);
/* "off" | "threshold=N,time_us=M" (either key may be left out: threshold 1, time 0).
 * -EINVAL for syntax, -ERANGE for a value the command word cannot carry. */
int nvme_coalescing_parse(const char *s, NvmeCoalescing *ret);
/* Canonical text: "off" for the reset value (cdw11 0), else "threshold=N,time_us=M". */
int nvme_coalescing_format(const NvmeCoalescing *c, char **ret);

/* Autonomous Power State Transition (FID 0x0C): cdw11 bit 0 APSTE. Set Features
 * also transfers the table (NVME_APST_TABLE_BYTES, nvme-command.h). */
uint32_t nvme_apst_to_cdw11(bool enable);
bool nvme_apst_from_dw(uint32_t dw);

/* The blk-mq queue maps of an NVMe disk, from its hardware queues' cpu_list files.
 * blk-mq numbers the queues of the default map first, then the read map (present
 * when nvme.write_queues split reads from writes), then the poll map
 * (block/blk-mq.c: queue_offset; drivers/nvme/host/pci.c: nvme_pci_map_queues).
 * Each map covers every CPU once, so a map ends where the CPUs seen so far cover
 * all CPUs of all queues. io_poll (queue/io_poll) says whether the last map is the
 * poll map: with two maps and no polling, the second is the read map. */
typedef struct NvmeQueueMap {
        unsigned n_default, n_read, n_poll;
        bool known;  /* false: the cpu_lists did not split into whole maps */
        /* The tag depth of the hardware queues (mq/0/nr_tags), 0 if unknown: not in the
         * cpu_lists, so nvme_queue_map_from_queues() leaves it 0 and its callers, which
         * read the disk, fill it in. */
        unsigned nr_tags;
} NvmeQueueMap;

int nvme_queue_map_from_queues(const HwQueue *q, size_t n, bool io_poll, NvmeQueueMap *ret);
/* The write queues in the sense of nvme.write_queues: the default map, when a
 * separate read map exists; 0 when reads and writes share queues. */
unsigned nvme_queue_map_write_queues(const NvmeQueueMap *m);
/* The poll queues in the sense of nvme.poll_queues: the poll map. */
unsigned nvme_queue_map_poll_queues(const NvmeQueueMap *m);
/* The entries per I/O queue in the sense of nvme.io_queue_depth, as the tag set shows
 * them: nr_tags + 1 = min(io_queue_depth, CAP.MQES + 1) when the controller was
 * probed (drivers/nvme/host/pci.c: nvme_pci_enable, nvme_dev_add); 0 if unknown. */
unsigned nvme_queue_map_io_queue_depth(const NvmeQueueMap *m);
