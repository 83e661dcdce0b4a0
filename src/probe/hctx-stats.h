/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per hardware queue (blk-mq hctx) counters of one disk, from debugfs:
 * <debugfs>/block/<disk>/hctx<N>/ (block/blk-mq-debugfs.c). What exists depends on
 * the kernel:
 *   type    "default", "read" or "poll" (hctx_type_show), 5.0 and later;
 *   queued  requests allocated on the hctx ("%lu"), removed in 5.16 (with
 *           "dispatched" and "io_poll": "block: remove some blk_mq_hw_ctx debugfs
 *           entries");
 *   run     times the hctx was run, i.e. dispatched from its software queues or
 *           scheduler ("%lu", blk_mq_sched_dispatch_requests), removed in 6.9
 *           ("blk-mq: Remove the hctx 'run' debugfs attribute").
 *   sched_tags  the scheduler's tags ("nr_tags=..."), empty without an I/O
 *           scheduler (hctx_sched_tags_show).
 * So 6.1 has type and run, 6.12 only type. `run` counts queue runs, not requests:
 * with an I/O scheduler every request is dispatched by a run, but without one
 * ("none") requests are issued directly (blk_mq_try_issue_directly, or a plug
 * flushed through ->queue_rqs) and no run counts them. Seen on 6.1 (QEMU NVMe,
 * nvme.poll_queues=1): 3000 reads at QD1 left every `run` at 0 with "none", and
 * added 3000 to the queue they went to with mq-deadline, polled or not. */
typedef struct HctxStat {
        unsigned index;           /* N of hctxN */
        char type[16];            /* "default", "read", "poll" */
        bool has_queued, has_run; /* whether the kernel has the file */
        int scheduled;            /* sched_tags non-empty: 1, an I/O scheduler is attached; 0 none; -1 unknown */
        uint64_t queued;
        uint64_t run;
} HctxStat;

typedef struct HctxStats {
        /* false: why_not says why (debugfs not mounted or not readable, no
         * block/<disk>, a file that is not a regular file or not a number, or a
         * kernel without per-hctx counters). items may still list the hctxs with
         * their types when only the counters are missing. */
        bool available;
        char *why_not;
        HctxStat *items; /* sorted by index */
        size_t n;
} HctxStats;

/* At most this many hctx<N> directories are read; more is refused (why_not). */
#define HCTX_STATS_MAX 4096u

/* debugfs_root: "/sys/kernel/debug" (or a fixture dir). Problems with the tree are
 * reported through available/why_not and 0; -EINVAL for a disk name that is not a
 * single path component, -ENOMEM. *ret is always initialized on 0. */
int hctx_stats_read(const char *debugfs_root, const char *disk, HctxStats *ret);
void hctx_stats_done(HctxStats *s);

/* The hctx of index `index`, or NULL. */
const HctxStat *hctx_stats_find(const HctxStats *s, unsigned index);
