/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `iotunectl diagnose`: the plan verified, two samples of what the kernel counts,
 * and the findings of diagnose/ over them. Reads only: nothing is written, no
 * originals are recorded, no hold is taken. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diagnose.h"
#include "fileio.h"
#include "hctx-stats.h"
#include "health.h"
#include "irq-counts.h"
#include "log.h"
#include "nvme-health.h"
#include "rootfs.h"
#include "signals.h"
#include "util.h"
#include "writers.h"

/* What one disk's two samples hold. */
typedef struct Sample {
        BlockStat stat[2];
        bool has_stat[2];
        double inflight_sum;
        unsigned inflight_n;
        HctxStats hctx[2];
        IrqVectors vectors;
} Sample;

void diagnose_report_done(DiagnoseReport *r) {
        assert(r);

        for (size_t i = 0; i < r->n; i++) {
                device_plan_free(r->items[i].plan);
                finding_list_done(&r->items[i].findings);
        }
        free(r->items);
        *r = (DiagnoseReport){};
}

static void sample_inflight(DiagnoseReport *rep, Sample *s) {
        for (size_t i = 0; i < rep->n; i++) {
                unsigned v;
                if (blockstat_read_inflight(rep->items[i].plan->device->syspath, &v) == 0) {
                        s[i].inflight_sum += v;
                        s[i].inflight_n++;
                }
        }
}

static void sample(Tuner *t, const char *debugfs, DiagnoseReport *rep, Sample *s, unsigned which) {
        for (size_t i = 0; i < rep->n; i++) {
                const Device *d = rep->items[i].plan->device;
                s[i].has_stat[which] = blockstat_read(d->syspath, &s[i].stat[which]) >= 0;
                if (d->io_poll)
                        (void) hctx_stats_read(debugfs, d->name, &s[i].hctx[which]);
        }
}

/* Settings whose kernel value is not the plan's: said first, they are what an
 * operator asked about. */
static int plan_findings(const DevicePlan *p, FindingList *out) {
        if (p->error && !finding_add(out, p->device->name, "not-tuned", FINDING_WARNING, NULL, NULL, "%s", p->error))
                return -ENOMEM;
        for (size_t k = 0; k < p->n_settings; k++) {
                const Setting *s = &p->settings[k];
                if (s->state == STATE_DRIFTED &&
                    !finding_add(out, p->device->name, "not-as-planned", FINDING_WARNING, setting_label(s), NULL,
                                 "%s is %s; profile %s wants %s", setting_label(s), s->observed ?: "?",
                                 p->profile ?: "-", s->effective ?: s->desired))
                        return -ENOMEM;
                if (s->state == STATE_FAILED &&
                    !finding_add(out, p->device->name, "setting-failed", FINDING_WARNING, setting_label(s), NULL,
                                 "%s: %s", setting_label(s), s->note ?: "cannot be read"))
                        return -ENOMEM;
        }
        return 0;
}

/* The writers of this disk's knobs, and the fights among them: one that matches
 * the disk for certain, writes a planned knob a value the profile does not want,
 * and writes it again later (a udev rule that runs on "change" events, which
 * `udevadm trigger` and many tools send; a running TuneD, at each of its
 * applies), after which iotuned puts it back and counts the drift. A rule that
 * runs on "add" only writes before iotuned first tunes the disk: no fight. */
static int writer_findings(Tuner *t, const DevicePlan *p, FindingList *out) {
        WriterList l = {};
        int r;

        r = writers_scan(t->root, p->device, &l);
        if (r < 0)
                return r;
        r = writers_findings(&l, p->device->name, out);
        for (size_t i = 0; r >= 0 && i < l.n; i++) {
                const Writer *w = &l.items[i];
                if (w->match != WRITER_MATCH_YES || !w->value || w->dormant ||
                    (w->kind == WRITER_UDEV_RULE && !w->on_change) ||
                    (w->kind != WRITER_UDEV_RULE && w->kind != WRITER_TUNED))
                        continue;
                for (size_t k = 0; k < p->n_settings; k++) {
                        const Setting *s = &p->settings[k];
                        _cleanup_free_ char *norm = NULL;
                        if (!streq(s->knob->name, w->knob) || !s->effective)
                                continue;
                        /* In the kernel's terms, as the plan's: a value that does not
                         * normalize (TuneD's ">4096") is no claim of a fight. */
                        if (!s->knob->normalize || s->knob->normalize(w->value, &norm) < 0 || streq(norm, s->effective))
                                break;
                        if (!finding_add(out, p->device->name, "fights-iotuned", FINDING_WARNING, s->knob->name,
                                         w->source,
                                         "%s %s writes %s=%s %s; profile %s wants %s: iotuned puts it back "
                                         "each time, counted as drift",
                                         w->who, w->source ?: "", s->knob->name, norm,
                                         w->kind == WRITER_UDEV_RULE ? "on every change event"
                                                                     : "each time TuneD applies its profile",
                                         p->profile ?: "-", s->effective))
                                r = -ENOMEM;
                        break;
                }
        }
        writer_list_done(&l);
        return r;
}

static bool controller_seen(const DiagnoseReport *rep, size_t upto, const char *ctrl) {
        for (size_t i = 0; i < upto; i++) {
                const NvmeCtrl *c = rep->items[i].plan->device->nvme;
                if (c && streq(c->name, ctrl))
                        return true;
        }
        return false;
}

static int health_of(const DiagnoseReport *rep, size_t i, FindingList *out) {
        const NvmeCtrl *c = rep->items[i].plan->device->nvme;
        NvmeHealth h = {};
        int r;

        if (!c || !c->transport || controller_seen(rep, i, c->name))
                return 0; /* once per controller, with its first disk */
        r = nvme_health_read(c, &h);
        if (r >= 0)
                r = health_findings(c->name, &h, out);
        nvme_health_done(&h);
        return r;
}

static int collect(Tuner *t, const DiagnoseOptions *o, DiagnoseReport *rep, Sample *s, const IrqCounts *ia,
                   const IrqCounts *ib, size_t i) {
        DiagnoseDevice *dd = &rep->items[i];
        const Device *d = dd->plan->device;
        FindingList *out = &dd->findings;
        int r;

        r = plan_findings(dd->plan, out);
        if (r >= 0 && o->health)
                r = health_of(rep, i, out);
        if (r >= 0 && s[i].has_stat[0] && s[i].has_stat[1]) {
                const char *sched = NULL;
                _cleanup_free_ char *now = NULL;
                if (knob_read_queue(knob_get(KNOB_SCHEDULER), d->syspath, &now) >= 0)
                        sched = now;
                dd->has_load = blockstat_load(&s[i].stat[0], &s[i].stat[1], &dd->load) >= 0;
                if (dd->has_load)
                        r = signals_block(d->name, sched ?: "none", d->rotational, &s[i].stat[0], &s[i].stat[1],
                                          s[i].inflight_n ? s[i].inflight_sum / s[i].inflight_n : -1, out);
        }
        if (r >= 0 && ia && ib && s[i].vectors.n)
                r = signals_irq(d->name, &s[i].vectors, ia, ib, &t->topology, d->numa_node, d->queues, d->n_queues,
                                out);
        if (r >= 0 && d->io_poll) {
                /* Completions against interrupts say it where they can; blk-mq's
                 * debugfs counters otherwise. */
                int polled = 0;
                if (ia && ib && s[i].has_stat[0] && s[i].has_stat[1])
                        polled = signals_polled(d->name, &s[i].stat[0], &s[i].stat[1], &s[i].vectors, ia, ib, out);
                r = polled == -ENOMEM ? polled
                    : polled == 1     ? 0
                                      : pollq_findings(d->name, d->io_poll, &s[i].hctx[0], &s[i].hctx[1], out);
        }
        if (r >= 0)
                r = writer_findings(t, dd->plan, out);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "%s: some findings are missing: %m", d->name);
        finding_list_sort(out);
        return 0;
}

int tuner_diagnose(Tuner *t, const Config *c, char *const *names, const DiagnoseOptions *o, DiagnoseReport *ret,
                   const char **ret_bad) {
        _cleanup_free_ char *debugfs = NULL;
        _cleanup_free_ unsigned *irqs = NULL;
        _cleanup_(plan_done) Plan plan = {};
        _cleanup_strv_free_ char **lost = NULL;
        IrqCounts ia = {}, ib = {};
        DiagnoseReport rep = {};
        Sample *s = NULL;
        size_t n_irqs = 0;
        uint64_t start, step;
        bool have_irqs;
        int r;

        assert(t);
        assert(c);
        assert(o);
        assert(ret);

        r = tuner_run(t, c, names, RECONCILE_VERIFY, &plan, &lost, ret_bad);
        if (r < 0)
                return r;
        r = root_resolve(t->root, "/sys/kernel/debug", &debugfs);
        if (r < 0)
                return r;
        rep.items = calloc(plan.n ?: 1, sizeof(DiagnoseDevice));
        s = calloc(plan.n ?: 1, sizeof(Sample));
        if (!rep.items || !s) {
                free(s);
                free(rep.items);
                return -ENOMEM;
        }
        for (size_t i = 0; i < plan.n; i++) {
                if (plan.devices[i]->excluded)
                        continue;
                rep.items[rep.n++].plan = TAKE_PTR(plan.devices[i]);
        }

        /* The vectors of every disk, and the union of their numbers for the counts. */
        for (size_t i = 0; i < rep.n; i++) {
                unsigned *more;
                if (device_irq_vectors(rep.items[i].plan->device, &t->irqs, &s[i].vectors) < 0 || !s[i].vectors.n)
                        continue;
                more = realloc(irqs, (n_irqs + s[i].vectors.n) * sizeof(unsigned));
                if (!more) {
                        r = -ENOMEM;
                        goto finish;
                }
                irqs = more;
                for (size_t k = 0; k < s[i].vectors.n; k++)
                        irqs[n_irqs++] = s[i].vectors.items[k].irq;
        }

        have_irqs = n_irqs && tuner_read_irq_counts(t, irqs, n_irqs, &ia) >= 0;
        start = now_usec(CLOCK_MONOTONIC);
        sample(t, debugfs, &rep, s, 0);
        step = o->interval_usec / DIAGNOSE_INFLIGHT_SAMPLES;
        for (unsigned k = 0; k < DIAGNOSE_INFLIGHT_SAMPLES; k++) {
                sample_inflight(&rep, s);
                (void) usleep(step);
        }
        sample(t, debugfs, &rep, s, 1);
        have_irqs = have_irqs && tuner_read_irq_counts(t, irqs, n_irqs, &ib) >= 0;
        rep.seconds = (double) (now_usec(CLOCK_MONOTONIC) - start) / 1e6;

        for (size_t i = 0; i < rep.n; i++) {
                r = collect(t, o, &rep, s, have_irqs ? &ia : NULL, have_irqs ? &ib : NULL, i);
                if (r < 0)
                        goto finish;
        }
        *ret = rep;
        rep = (DiagnoseReport){};
        r = 0;
finish:
        for (size_t i = 0; i < plan.n; i++) {
                hctx_stats_done(&s[i].hctx[0]);
                hctx_stats_done(&s[i].hctx[1]);
                irq_vectors_done(&s[i].vectors);
        }
        free(s);
        irq_counts_done(&ia);
        irq_counts_done(&ib);
        diagnose_report_done(&rep);
        return r;
}
