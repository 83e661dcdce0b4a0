/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "finding.h"
#include "hctx-stats.h"
#include "nvme-health.h"

/* What a controller's health and a disk's poll queues say: pure functions (no I/O),
 * so tests feed decoded structures. They only add to `out`; on -ENOMEM the findings
 * added before stay there (the list owns them). */

/* An APST target whose entry + exit latency reaches 10 ms is a wake-up stall a
 * latency-sensitive workload sees on the first I/O after an idle period (the
 * kernel's default budget, nvme_core.default_ps_max_latency_us, is 100 ms). */
#define HEALTH_APST_STALL_US 10000u

/* Findings about controller `ctrl` (nvme0):
 *  - NOTICE "smart-unreadable" with smart_error when SMART was not read (and
 *    nothing else from SMART);
 *  - INFO "smart": temperature_c, available_spare_pct, spare_threshold_pct,
 *    percent_used, media_errors, power_on_hours, unsafe_shutdowns, error_log_entries;
 *  - CRITICAL "smart-critical-warning": each set bit of the critical warning in
 *    words; value critical_warning;
 *  - CRITICAL "thermal-throttle": the composite temperature at or above WCTEMP, the
 *    temperature warning bit, or any lifetime thermal counter non-zero (time above
 *    WCTEMP / CCTEMP, thermal management time); the caller lists it first;
 *  - WARNING "media-errors" when media_errors > 0;
 *  - "apst-exit-latency" (knob "apst"): NOTICE when APST is on and a target's
 *    entry + exit latency >= HEALTH_APST_STALL_US (naming the state), INFO with the
 *    numbers otherwise (also when APST is off or absent);
 *  - INFO "apst-unknown" with apst_error when SMART was read but APST was not.
 * 0 or -ENOMEM. */
int health_findings(const char *ctrl, const NvmeHealth *h, FindingList *out);

/* Fewer requests (or queue runs) than this on the default/read queues between the
 * samples say nothing about where polled I/O went. */
#define HEALTH_POLLQ_MIN_OTHER 100u

/* Two samples a, b of the disk's hctx stats; io_poll: the queue has poll queues
 * (Device.io_poll). Nothing when !io_poll or when the hctx types show no poll
 * queue. Otherwise:
 *  - NOTICE "poll-unknown" (knob "poll_queues") with the reason when either sample
 *    is unavailable, the queues differ between them, a counter went backwards, or
 *    the counter is "run", the poll queues' delta is 0 and some hctx has no I/O
 *    scheduler (requests issued directly are not runs: nothing can be told);
 *  - NOTICE "poll-queues-unused" when the poll queues' delta is 0 while the
 *    default/read queues' is >= HEALTH_POLLQ_MIN_OTHER;
 *  - INFO "poll-queues-used" with the counts otherwise.
 * The counter is "queued" (requests) when every hctx of both samples has it, else
 * "run" (queue runs, 6.1-6.8). Values: poll_queues, poll_<counter>,
 * other_<counter>, hctx<N>_<counter> per poll queue. 0 or -ENOMEM. */
int pollq_findings(const char *disk, bool io_poll, const HctxStats *a, const HctxStats *b, FindingList *out);
