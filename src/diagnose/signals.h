/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "blockstat.h"
#include "device.h"
#include "finding.h"
#include "irq-counts.h"
#include "irq.h"
#include "topology.h"

/* What two samples of a disk's load and of its interrupts say: pure functions of
 * the samples (no file I/O), so tests feed captured ones. They only add to `out`;
 * on an error the findings added before it stay there (the list owns them). */

/* The software-queue signature (the incident that started `diagnose`: mq-deadline
 * on NVMe, seen in iostat as a deep queue with a high await while the device was
 * not the limit). All of these must hold: */
/* Averaging 4 or more requests in the system: a fast SSD serves a queue of 1-2
 * within its latency, so a deeper one is waiting somewhere. */
#define SIGNAL_SWQ_MIN_QUEUE_DEPTH 4.0
/* At least 1 ms per I/O: NVMe completes reads in tens to hundreds of us, so a
 * millisecond average is time spent queued, not served. */
#define SIGNAL_SWQ_MIN_AWAIT_MS 1.0
/* And the device is not the limit: busy less than 90% of the time (a device that
 * is saturated explains its own queue)... */
#define SIGNAL_SWQ_MAX_UTILISATION 0.9
/* ... or, with /sys/block/X/inflight sampled, at most half the requests are at
 * the device. inflight counts only requests dispatched to the driver
 * (block/blk-mq.c blk_mq_check_inflight: MQ_RQ_IN_FLIGHT), while queue_depth
 * (time_in_queue / time, Little's law) counts them from submission, scheduler
 * wait included: the difference is what waits in software. Utilisation ("%util")
 * says little on NVMe, which serves many requests at once: 100% only means one
 * was always in flight. */
#define SIGNAL_SWQ_DEVICE_SHARE 0.5

/* `scheduler` is the disk's current scheduler ("none", "mq-deadline", ...; NULL:
 * unknown, no software-queue check); inflight_mean: mean of /sys/block/X/inflight
 * (reads + writes) sampled between a and b, negative (or NaN) when not sampled.
 * Adds an INFO "io-load" (iops, queue_depth, await_ms, utilisation 0..1 and, when
 * sampled, device_inflight), and the WARNING "software-queue" (knob "scheduler")
 * when the signature above holds on a non-rotational disk whose scheduler is not
 * "none". No completions between the samples: only an "io-load" that says "idle".
 * -EINVAL (and nothing added) when `b` is not after `a` or a counter went
 * backwards (blockstat_load: the disk was replaced in between): there is no load
 * to speak of, and the caller should sample again. -ENOMEM. */
int signals_block(const char *disk, const char *scheduler, bool rotational, const BlockStat *a, const BlockStat *b,
                  double inflight_mean, FindingList *out);

/* Interrupt thresholds. */
/* A vector is off its disk's node when more than half of its interrupts in the
 * interval landed on CPUs of other nodes: most completions then touch the
 * request's memory across the interconnect. */
#define SIGNAL_IRQ_OFF_NODE_SHARE 0.5
/* Fewer interrupts than this in the interval say nothing about placement (the
 * admin queue fires a few times a minute wherever it was left): the off-node
 * check needs this many on the vector, and a silent queue needs another queue of
 * the disk with this many. */
#define SIGNAL_IRQ_MIN_INTERRUPTS 100
/* One CPU taking more than 80% of a disk's I/O interrupts, with 2+ I/O vectors
 * and 2+ online CPUs, means every completion lands on one CPU (one submitter,
 * or a queue map or affinity that funnels them), which caps the IOPS at what
 * that CPU can complete... */
#define SIGNAL_HOT_CPU_SHARE 0.8
/* ... at rates where that matters (below it, one CPU handles them easily). */
#define SIGNAL_HOT_CPU_MIN_RATE 100.0
/* Fewer hardware queues than one per 4 online CPUs: most submitters share a
 * queue with CPUs of other cores (or nodes), and their completions cross CPUs. */
#define SIGNAL_FEW_QUEUES_CPUS_PER_QUEUE 4

/* The disk's vectors `v` (from device_irq_vectors), two samples a, b of their
 * counts (NULL: not sampled, only the queue-map checks run), the machine
 * topology, the disk's NUMA node (-1: none), its hardware queues (cpu_list each).
 * Deltas per CPU are taken over the CPUs both samples list, modulo 2^32 (the
 * kernel's counters are 32-bit); vectors missing from either sample are left out.
 * Adds:
 *  - INFO "irq-rates": values "irq<N>_per_s" per vector, total_per_s, seconds;
 *  - WARNING "irq-off-node" (knob "irq <N>"), per vector with more than
 *    SIGNAL_IRQ_OFF_NODE_SHARE of its >= SIGNAL_IRQ_MIN_INTERRUPTS interrupts
 *    outside the disk's node (only with numa_node >= 0 and 2+ nodes with CPUs);
 *  - NOTICE "hot-cpu": one CPU takes more than SIGNAL_HOT_CPU_SHARE of the I/O
 *    vectors' interrupts (2+ I/O vectors, 2+ online CPUs, >= SIGNAL_HOT_CPU_MIN_RATE/s);
 *  - NOTICE "silent-queue": I/O vectors with no interrupt while another I/O
 *    vector of the disk had >= SIGNAL_IRQ_MIN_INTERRUPTS;
 *  - WARNING "queue-map-one-cpu": 2+ hardware queues, all mapped to one same CPU;
 *  - NOTICE "few-queues": n_queues * SIGNAL_FEW_QUEUES_CPUS_PER_QUEUE < online CPUs.
 * Vectors with queue == -1 (admin, config) count for rates and off-node only.
 * -EINVAL (nothing added) when both samples are given and `b` is not after `a`;
 * -ENOMEM. */
int signals_irq(const char *disk, const IrqVectors *v, const IrqCounts *a, const IrqCounts *b, const Topology *t,
                int numa_node, const HwQueue *queues, size_t n_queues, FindingList *out);

/* Polled I/O, seen from the counters: on a disk with poll queues (io_poll) the
 * completions between two stat samples against the interrupts its I/O vectors
 * (queue >= 0) raised between two /proc/interrupts samples. A polled completion
 * raises none: the submitting task reaps it (FACTS.md). At least
 * SIGNAL_POLL_MIN_COMPLETIONS completions are needed; with over 10% more
 * interrupts than completions (another disk shares the vectors) nothing is
 * concluded. NOTICE "poll-queues-unused" when at most SIGNAL_POLL_UNUSED_SHARE
 * of the completions raised no interrupt. Fewer interrupts than completions
 * prove polling only when the requests were not in flight together (an
 * interrupt may reap several completions): at an average queue depth of at
 * most SIGNAL_POLL_MAX_QUEUE_DEPTH, INFO "polled-completions" with the share
 * (saying "reaches the poll queues" from SIGNAL_POLL_USED_SHARE on); deeper,
 * nothing. Returns 1 when it concluded, 0 when the counters cannot tell (the
 * caller may ask blk-mq debugfs), -EINVAL when `b` is not after `a`, -ENOMEM.
 * Interrupt coalescing also lowers interrupts per completion: the summary says
 * so. */
#define SIGNAL_POLL_MIN_COMPLETIONS 100u
#define SIGNAL_POLL_USED_SHARE 0.5
#define SIGNAL_POLL_UNUSED_SHARE 0.05
#define SIGNAL_POLL_MAX_QUEUE_DEPTH 1.5
int signals_polled(const char *disk, const BlockStat *sa, const BlockStat *sb, const IrqVectors *v,
                   const IrqCounts *ia, const IrqCounts *ib, FindingList *out);
