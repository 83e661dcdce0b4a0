/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* At each drift check, each tuned disk's load since the previous check, from its
 * stat (one read of /proc/diskstats for every disk), and its vectors' interrupts,
 * from one read of /proc/interrupts, and what they show (diagnose/signals.h): kept
 * with the plan for status.json and the metrics, a warning logged once per
 * episode. The requests at the device come from the disk's inflight file, as
 * `iotunectl diagnose` reads them (device_inflight()). */
#include <assert.h>

#include "blockstat.h"
#include "events.h"
#include "fileio.h"
#include "log.h"
#include "manager-internal.h"
#include "timing.h"
#include "signals.h"
#include "util.h"

static bool has_kind(const FindingList *l, const char *kind) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].kind, kind))
                        return true;
        return false;
}

static const char *current_scheduler(const DevicePlan *p) {
        for (size_t k = 0; k < p->n_settings; k++)
                if (p->settings[k].knob->id == KNOB_SCHEDULER && p->settings[k].observed)
                        return p->settings[k].observed;
        return NULL;
}

/* The disk's interrupt signatures between the last check's counts and these
 * (diagnose/signals.h); with no earlier counts, its queue maps only. */
static int irq_signals(Manager *m, const DevicePlan *p, const IrqCounts *prev, const IrqCounts *cur,
                       FindingList *found) {
        const Device *d = p->device;
        IrqVectors v = {};
        int r;

        if (!cur || device_irq_vectors(d, &m->tuner.irqs, &v) < 0)
                return 0;
        r = v.n ? signals_irq(d->name, &v, prev, prev ? cur : NULL, &m->tuner.topology, d->numa_node, d->queues,
                              d->n_queues, found)
                : 0;
        irq_vectors_done(&v);
        return r;
}

/* The requests the driver holds now, or -1 where that is not known (the
 * signature then rests on utilisation alone). Read from the inflight file, not
 * from the in_flight column of /proc/diskstats: on 6.1 the two agree
 * (blk_mq_in_flight, block/genhd.c), but on 6.12 the diskstats column also
 * counts requests still waiting in the scheduler. Seen in the VM test bed,
 * fio at QD32 on a 4-tag null_blk disk with mq-deadline: 28-32 in diskstats,
 * 0-4 in inflight. Read only where the software-queue signature can apply (a
 * scheduler, not rotational), so an idle fleet of `none` disks costs nothing. */
static double device_inflight(const DevicePlan *p, const char *scheduler) {
        unsigned v;

        if (p->device->rotational || streq(scheduler, "none") ||
            blockstat_read_inflight(p->device->syspath, &v) < 0)
                return -1;
        return (double) v;
}

bool manager_sample_load(Manager *m, DevicePlan *p, const DiskStats *stats, const IrqCounts *prev,
                         const IrqCounts *cur) {
        TIMING_SCOPE(TIMING_LOAD);
        _cleanup_free_ char *sched = NULL;
        FindingList found = {};
        bool changed = false, linger = false;
        BlockStat now;
        BlockLoad load;

        assert(m);
        assert(p);

        /* From the drift check's one read of /proc/diskstats; a disk not in it (or
         * no such file: a test tree) from its own stat file. */
        const BlockStat *st = stats ? diskstats_find(stats, p->device->name) : NULL;
        if (st)
                now = *st;
        else if (blockstat_read(p->device->syspath, &now) < 0) {
                p->has_stat = p->has_load = false;
                return false;
        }
        if (p->has_stat && blockstat_load(&p->last_stat, &now, &load) == 0) {
                const char *s = current_scheduler(p);
                if (!s && knob_read_queue(knob_get(KNOB_SCHEDULER), p->device->syspath, &sched) >= 0)
                        s = sched;
                s = s ?: "none";
                if (signals_block(p->device->name, s, p->device->rotational, &p->last_stat, &now,
                                  device_inflight(p, s), &found) == -ENOMEM ||
                    irq_signals(m, p, prev, cur, &found) == -ENOMEM) {
                        finding_list_done(&found);
                        log_oom();
                        return false;
                }
                uint64_t mono = manager_now(m, CLOCK_MONOTONIC);
                if (finding_list_worst(&found) >= FINDING_WARNING)
                        p->warning_seen_usec = mono;
                else if (finding_list_worst(&p->findings) >= FINDING_WARNING &&
                         mono - p->warning_seen_usec < FINDING_LINGER_USEC) {
                        /* A load near a threshold comes and goes from one sample to the
                         * next: a warning stays until no sample has shown one for a
                         * while, so that it is logged once per episode. */
                        finding_list_done(&found);
                        linger = true;
                }
                for (size_t i = 0; i < found.n && !linger; i++)
                        if (found.items[i].severity >= FINDING_WARNING &&
                            !has_kind(&p->findings, found.items[i].kind)) {
                                event_finding(p, &found.items[i]);
                                changed = true;
                        }
                for (size_t i = 0; i < p->findings.n && !linger; i++)
                        if (p->findings.items[i].severity >= FINDING_WARNING &&
                            !has_kind(&found, p->findings.items[i].kind)) {
                                log_info("%s: %s is gone.", p->device->name, p->findings.items[i].kind);
                                changed = true;
                        }
                if (!linger) {
                        finding_list_done(&p->findings);
                        p->findings = found;
                }
                p->load = load;
                p->has_load = true;
        }
        p->last_stat = now;
        p->has_stat = true;
        return changed;
}
