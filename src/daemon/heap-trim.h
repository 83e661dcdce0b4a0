/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <systemd/sd-event.h>

#include "backoff.h"
#include "macro.h"

/* After a trigger that handled many disks (a burst of hot-adds, a start or
 * reload with hundreds), the heap's freed scratch (udev devices, probe strings,
 * JSON) is handed back to the kernel: resident memory then follows the plans
 * kept, not the burst. */
#define TRIM_AFTER_DISKS 32
/* Event paths (the kernel's adds, udev's batches): the trim waits until no batch
 * has come for TRIM_QUIET_USEC. A trim after every batch of a burst had the next
 * batch fault its pages in afresh (zeroed by the kernel), and a burst of hundreds
 * of disks comes in tens of batches. */
#define TRIM_QUIET_USEC (1 * USEC_PER_SEC)

/* The heap trimmed once a burst's events stop: its timer, and the disks handled
 * by events since the last trim. Owned by the Manager. */
typedef struct HeapTrimmer HeapTrimmer;

int heap_trimmer_new(sd_event *event, HeapTrimmer **ret);
HeapTrimmer *heap_trimmer_free(HeapTrimmer *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(HeapTrimmer *, heap_trimmer_free);

/* Now, when `disks` (handled by a start, a reload, a drift check) are at least
 * TRIM_AFTER_DISKS. */
void heap_trim(size_t disks);
/* `disks` more were handled by events: trimmed once TRIM_AFTER_DISKS are, after
 * TRIM_QUIET_USEC without another call (no timer: at once). */
void heap_trimmer_later(HeapTrimmer *t, size_t disks);
