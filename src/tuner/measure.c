/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Measured tuning: candidates set through the reconcile path, a read-only load
 * under each, alternating rounds, a paired statistic (measure.h). */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "health.h"
#include "hold.h"
#include "io-probe.h"
#include "log.h"
#include "measure.h"
#include "nvme-health.h"
#include "util.h"

/* What switching knobs and reading back costs per trial, for the estimate. */
#define TRIAL_OVERHEAD_USEC (200ULL * 1000ULL)
/* The hold outlives the estimate by this much: a slow round does not lose it. */
#define HOLD_SLACK_USEC (120ULL * 1000000ULL)
/* How long the load is watched before measuring (the busy check). */
#define BUSY_SAMPLE_USEC (1000ULL * 1000ULL)

static const KnobId measure_order[] = {
        KNOB_SCHEDULER, KNOB_NR_REQUESTS, KNOB_RQ_AFFINITY, KNOB_NOMERGES, KNOB_WBT_LAT_USEC,
};

const char *candidate_verdict_to_string(CandidateVerdict v) {
        static const char *const names[_CANDIDATE_VERDICT_MAX] = {
                [CANDIDATE_BASELINE] = "baseline", [CANDIDATE_TIE] = "tie",       [CANDIDATE_BETTER] = "better",
                [CANDIDATE_WORSE] = "worse",       [CANDIDATE_MIXED] = "mixed",   [CANDIDATE_FAILED] = "failed",
                [CANDIDATE_SAME] = "same",         [CANDIDATE_WINNER] = "winner",
        };
        return v >= 0 && v < _CANDIDATE_VERDICT_MAX ? names[v] : "?";
}

const char *knob_trial_name(const KnobTrial *kt) {
        assert(kt);
        return kt->poll ? "poll" : knob_get(kt->knob)->name;
}

void measure_report_done(MeasureReport *r) {
        assert(r);

        free(r->disk);
        free(r->model);
        free(r->serial);
        free(r->profile);
        free(r->rule);
        free(r->restore_error);
        finding_list_done(&r->health);
        for (size_t i = 0; i < r->n_trials; i++) {
                KnobTrial *k = &r->trials[i];
                free(k->from);
                free(k->skipped);
                for (size_t c = 0; c < k->n; c++) {
                        free(k->candidates[c].value);
                        free(k->candidates[c].observed);
                        free(k->candidates[c].note);
                }
        }
        *r = (MeasureReport){};
}

/* The schedulers the queue offers, from "[none] mq-deadline kyber". */
static bool scheduler_offered(const Device *d, const char *name) {
        _cleanup_free_ char *raw = NULL;

        if (read_attr_at(d->syspath, "queue/scheduler", &raw) < 0)
                return false;
        for (char *w = strtok(raw, " []\n"); w; w = strtok(NULL, " []\n"))
                if (streq(w, name))
                        return true;
        return false;
}

int measure_candidates(KnobId k, const Device *d, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r = 0;

        assert(d);
        assert(ret);

        switch (k) {
        case KNOB_SCHEDULER:
                /* bfq is left out: it trades throughput for fairness between processes,
                 * which a one-process load cannot show. */
                for (const char *const *s = (const char *const[]){"none", "mq-deadline", "kyber", NULL}; *s; s++)
                        if (scheduler_offered(d, *s) && (r = strv_extend(&l, *s)) < 0)
                                return r;
                break;
        case KNOB_NR_REQUESTS:
                if ((r = strv_extend(&l, "64")) < 0 || (r = strv_extend(&l, "max")) < 0)
                        return r;
                break;
        case KNOB_RQ_AFFINITY:
                if ((r = strv_extend(&l, "1")) < 0 || (r = strv_extend(&l, "2")) < 0)
                        return r;
                break;
        case KNOB_NOMERGES:
                if ((r = strv_extend(&l, "0")) < 0 || (r = strv_extend(&l, "2")) < 0)
                        return r;
                break;
        case KNOB_WBT_LAT_USEC:
                if ((r = strv_extend(&l, "0")) < 0 || (r = strv_extend(&l, "-1")) < 0)
                        return r;
                break;
        default:
                return -EINVAL;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Apply `values` (NULL: leave) to the disk through the reconcile path. The
 * resulting row of knob `k` (or _KNOB_INVALID) is copied out. */
static int apply_values(Tuner *t, const char *name, char *const values[_KNOB_MAX], KnobId k, char **ret_observed,
                        char **ret_note) {
        _cleanup_(device_plan_freep) DevicePlan *p = NULL;
        Device *d = NULL;
        int r;

        r = device_lookup(t->udev, name, &d);
        if (r < 0)
                return r;
        r = plan_device_from_values(d, "measure", values, NULL, t->root, &p);
        if (r < 0)
                return r;
        r = tuner_reconcile_device(t, p, RECONCILE_APPLY, NULL, false);
        if (r < 0)
                return r;
        int failed = 0;
        for (size_t i = 0; i < p->n_settings; i++) {
                const Setting *s = &p->settings[i];
                bool bad = s->state == STATE_FAILED || s->state == STATE_UNSUPPORTED;
                if (s->knob->id == k && ret_observed) {
                        *ret_observed = strdup_or_null(s->observed);
                        if (bad && ret_note)
                                *ret_note = strdup_or_null(s->note ?: setting_state_to_string(s->state));
                }
                if (bad) {
                        log_debug("%s: %s %s: %s", name, setting_label(s), setting_state_to_string(s->state),
                                  s->note ?: "");
                        failed = failed ?: (s->error ?: -EIO);
                }
        }
        return failed;
}

static uint64_t trial_usec(const MeasureOptions *o) {
        return (o->warmup_usec + o->runtime_usec) * o->n_depths + TRIAL_OVERHEAD_USEC;
}

static int renew_hold(Tuner *t, const char *name, uint64_t left_usec) {
        return hold_acquire(t->hold_dir, name, getpid(), now_usec(CLOCK_REALTIME) + left_usec + HOLD_SLACK_USEC);
}

/* Each measure of a candidate against the baseline, the combined gain, and
 * the verdict (measure.h, stats.h). */
static void judge(const MeasureOptions *o, KnobTrial *kt, unsigned rounds) {
        const Candidate *base = &kt->candidates[0];
        double best = 0;

        for (size_t c = 1; c < kt->n; c++) {
                Candidate *cd = &kt->candidates[c];
                double combined[MEASURE_MAX_ROUNDS] = {}, g[MEASURE_MAX_ROUNDS];
                bool worse = false;

                if (cd->verdict == CANDIDATE_FAILED || cd->verdict == CANDIDATE_SAME)
                        continue;
                for (size_t q = 0; q < o->n_depths && cd->verdict != CANDIDATE_FAILED; q++) {
                        DepthResult *dr = &cd->depth[q];
                        const DepthResult *br = &base->depth[q];
                        for (int m = 0; m < 2; m++) {
                                const double *cv = m == 0 ? dr->iops : dr->p99_usec;
                                const double *bv = m == 0 ? br->iops : br->p99_usec;
                                PairedEffect *e = m == 0 ? &dr->iops_effect : &dr->p99_effect;
                                EffectVerdict *v = m == 0 ? &dr->iops_verdict : &dr->p99_verdict;
                                if (paired_gains(cv, bv, rounds, m == 0, g) < 0 || gains_effect(g, rounds, e) < 0) {
                                        cd->verdict = CANDIDATE_FAILED;
                                        cd->note = strdup("no read completed in some round");
                                        break;
                                }
                                *v = effect_verdict(e, o->min_effect, o->alpha);
                                worse = worse || *v == EFFECT_WORSE;
                                for (unsigned i = 0; i < rounds; i++)
                                        combined[i] += g[i] / (2.0 * (double) o->n_depths);
                        }
                }
                if (cd->verdict == CANDIDATE_FAILED || gains_effect(combined, rounds, &cd->combined) < 0)
                        continue;
                switch (effect_verdict(&cd->combined, o->min_effect, o->alpha)) {
                case EFFECT_BETTER:
                        cd->verdict = worse ? CANDIDATE_MIXED : CANDIDATE_BETTER;
                        break;
                case EFFECT_WORSE:
                        cd->verdict = CANDIDATE_WORSE;
                        break;
                default:
                        cd->verdict = worse ? CANDIDATE_WORSE : CANDIDATE_TIE;
                }
                if (cd->verdict == CANDIDATE_BETTER && (kt->chosen == 0 || cd->combined.median > best)) {
                        kt->chosen = c;
                        best = cd->combined.median;
                }
        }
        if (kt->chosen)
                kt->candidates[kt->chosen].verdict = CANDIDATE_WINNER;
}

static int add_candidate(KnobTrial *kt, const char *value) {
        for (size_t i = 0; i < kt->n; i++)
                if (streq(kt->candidates[i].value, value))
                        return 0;
        if (kt->n == MEASURE_MAX_CANDIDATES)
                return 0;
        Candidate *c = &kt->candidates[kt->n];
        *c = (Candidate){.value = strdup(value), .verdict = kt->n == 0 ? CANDIDATE_BASELINE : CANDIDATE_TIE};
        if (!c->value)
                return -ENOMEM;
        for (size_t q = 0; q < MEASURE_MAX_DEPTHS; q++)
                hist_init(&c->depth[q].latency);
        kt->n++;
        return 0;
}

/* Sets up the baseline of every knob measure_order names, whether measured or
 * not (switching the scheduler resets nr_requests: a trial that sets only the
 * knob measured would measure the baseline under another nr_requests than the
 * profile's, and the end would not put it back), and r->trials for the knobs
 * measured: candidates, and the knobs skipped and why. */
static int prepare_trials(const DevicePlan *plan, const Device *d, const MeasureOptions *o, MeasureReport *r,
                          char *current[_KNOB_MAX], char *start[_KNOB_MAX]) {
        int k_r;

        for (size_t i = 0; i < ELEMENTSOF(measure_order); i++) {
                KnobId k = measure_order[i];
                bool measured = o->knobs & KNOB_MASK(k);
                KnobTrial *kt = measured ? &r->trials[r->n_trials++] : NULL;

                if (kt)
                        kt->knob = k;
                k_r = knob_read_queue(knob_get(k), d->syspath, &start[k]);
                if (k_r == -ENOMEM)
                        return k_r;
                if (k_r < 0) {
                        if (kt && !(kt->skipped = strdup("this disk does not offer it")))
                                return -ENOMEM;
                        continue;
                }
                const char *desired = NULL;
                for (size_t s = 0; s < plan->n_settings; s++)
                        if (plan->settings[s].knob->id == k && plan->settings[s].irq < 0)
                                desired = plan->settings[s].desired;
                current[k] = strdup(desired ?: start[k]);
                if (!current[k])
                        return -ENOMEM;
                if (!kt)
                        continue;
                if (desired && plan->profile)
                        k_r = asprintf_safe(&kt->from, "profile %s", plan->profile);
                else
                        k_r = (kt->from = strdup("current value")) ? 0 : -ENOMEM;
                if (k_r < 0 || add_candidate(kt, current[k]) < 0)
                        return -ENOMEM;
                _cleanup_strv_free_ char **cands = NULL;
                if (measure_candidates(k, d, &cands) < 0)
                        return -ENOMEM;
                for (char **c = cands; c && *c; c++)
                        if (add_candidate(kt, *c) < 0)
                                return -ENOMEM;
                if (kt->n < 2 && !(kt->skipped = strdup("no other value to measure on this disk")))
                        return -ENOMEM;
        }
        if (o->poll) {
                /* Not a knob: whether reads that poll for their completion gain on this
                 * disk. iotuned provides the poll queues (poll_queues); applications poll. */
                KnobTrial *kt = &r->trials[r->n_trials++];
                kt->knob = _KNOB_INVALID;
                kt->poll = true;
                if (!(kt->from = strdup("interrupt-driven reads")) || add_candidate(kt, "interrupt") < 0 ||
                    add_candidate(kt, "polled") < 0)
                        return -ENOMEM;
                if (!d->io_poll)
                        kt->skipped = strdup("the disk has no poll queues (queue/io_poll is 0): see poll_queues in "
                                             "iotuned.profile(5)");
                else if (o->hipri)
                        kt->skipped = strdup("--hipri polls every read already");
                if (kt->skipped == NULL && (!d->io_poll || o->hipri))
                        return -ENOMEM;
        }
        return 0;
}

static uint64_t estimate_left(const MeasureReport *r, const MeasureOptions *o, size_t from_trial, unsigned from_round) {
        uint64_t n = 0;
        for (size_t i = from_trial; i < r->n_trials; i++)
                if (!r->trials[i].skipped)
                        n += (uint64_t) r->trials[i].n * (o->rounds - (i == from_trial ? from_round : 0));
        return n * trial_usec(o);
}

static int measure_knob(Tuner *t, const char *name, const ProbeDisk *pd, const MeasureOptions *o, MeasureReport *r,
                        size_t ti, char *current[_KNOB_MAX], const char **ret_why) {
        KnobTrial *kt = &r->trials[ti];
        KnobId k = kt->knob;
        int q;

        for (unsigned round = 0; round < o->rounds; round++) {
                q = renew_hold(t, name, estimate_left(r, o, ti, round));
                if (q < 0) {
                        *ret_why = "cannot hold the disk against iotuned (" IOTUNED_RUN_DIR "/hold)";
                        return q;
                }
                /* ABAB: every candidate once per round, the first one rotating. */
                for (size_t j = 0; j < kt->n; j++) {
                        size_t c = (j + round) % kt->n;
                        Candidate *cd = &kt->candidates[c];
                        char *values[_KNOB_MAX];
                        _cleanup_free_ char *observed = NULL, *note = NULL;

                        if (cd->verdict == CANDIDATE_FAILED || cd->verdict == CANDIDATE_SAME)
                                continue;
                        if (o->stop && *o->stop)
                                return -EINTR;
                        memcpy(values, current, sizeof(values));
                        if (kt->poll)
                                /* the profile's values (a previous trial may have left another) */
                                q = apply_values(t, name, values, KNOB_SCHEDULER, &observed, &note);
                        else {
                                values[k] = cd->value;
                                q = apply_values(t, name, values, k, &observed, &note);
                        }
                        if (kt->poll && q >= 0) {
                                free(observed);
                                observed = strdup(cd->value);
                                if (!observed)
                                        return -ENOMEM;
                        }
                        if (q == -ENOMEM || q == -ENODEV || q == -ENOENT) {
                                *ret_why = q == -ENOMEM ? NULL : "the disk went away";
                                return q;
                        }
                        if (q < 0 || !observed) {
                                if (c == 0) {
                                        *ret_why = "the baseline value itself cannot be set";
                                        return q < 0 ? q : -EIO;
                                }
                                cd->verdict = CANDIDATE_FAILED;
                                free(cd->note);
                                cd->note = TAKE_PTR(note) ?: strdup("the kernel refused it");
                                continue;
                        }
                        if (!cd->observed) {
                                /* The first round: a value the kernel resolves to another
                                 * candidate's ("max" is 64 here) is measured once. */
                                for (size_t o2 = 0; o2 < kt->n && cd->verdict != CANDIDATE_SAME; o2++)
                                        if (o2 != c && c != 0 && kt->candidates[o2].observed &&
                                            streq(kt->candidates[o2].observed, observed)) {
                                                cd->verdict = CANDIDATE_SAME;
                                                (void) asprintf_safe(&cd->note, "the kernel makes it %s, as %s",
                                                                     observed, kt->candidates[o2].value);
                                        }
                                cd->observed = TAKE_PTR(observed);
                                if (cd->verdict == CANDIDATE_SAME)
                                        continue;
                        }
                        for (size_t d = 0; d < o->n_depths; d++) {
                                ProbeSpec spec = {
                                        .block_size = o->block_size,
                                        .depth = o->depths[d],
                                        .offset = o->offset,
                                        .length = o->length,
                                        .warmup_usec = o->warmup_usec,
                                        .runtime_usec = o->runtime_usec,
                                        .hipri = o->hipri || (kt->poll && c == 1),
                                        /* the same offsets for every candidate of a round: paired */
                                        .seed = 0x5EED0000ULL + round * 64 + d,
                                };
                                ProbeResult res;
                                int io_error = 0;

                                if (o->progress)
                                        o->progress(
                                                &(MeasureProgress){
                                                        .disk = name,
                                                        .knob = knob_trial_name(kt),
                                                        .candidate = cd->value,
                                                        .round = round + 1,
                                                        .rounds = o->rounds,
                                                        .depth = o->depths[d],
                                                        .left_usec = estimate_left(r, o, ti, round),
                                                },
                                                o->userdata);
                                q = io_probe_run(pd, &spec, o->stop, &res, &io_error);
                                if (q < 0) {
                                        if (q == -EIO)
                                                log_error_errno(io_error, "%s: a read failed: %m", name);
                                        *ret_why = q == -EINTR ? NULL : "the read load failed";
                                        return q;
                                }
                                cd->depth[d].iops[round] = res.iops;
                                cd->depth[d].p99_usec[round] = (double) hist_percentile(&res.latency, 99) / 1000.0;
                                hist_merge(&cd->depth[d].latency, &res.latency);
                        }
                }
                r->rounds_done = MAX(r->rounds_done, round + 1);
        }
        judge(o, kt, o->rounds);
        kt->judged = true;
        if (kt->chosen && !kt->poll) {
                /* Later knobs are measured on top of this one's winner. */
                char *v = strdup(kt->candidates[kt->chosen].value);
                if (!v)
                        return -ENOMEM;
                free(current[k]);
                current[k] = v;
        }
        return 0;
}

/* The drive's critical health findings, said before any number: a throttling
 * drive measures its thermals, not its software path. */
static int health_critical(const Device *d, FindingList *ret) {
        FindingList all = {};
        NvmeHealth h = {};
        int r;

        if (!d->nvme || !d->nvme->devnode)
                return 0;
        r = nvme_health_read(d->nvme, &h);
        if (r >= 0)
                r = health_findings(d->nvme->name, &h, &all);
        nvme_health_done(&h);
        for (size_t i = 0; r >= 0 && i < all.n; i++) {
                const Finding *f = &all.items[i];
                if (f->severity == FINDING_CRITICAL &&
                    !finding_add(ret, f->device, f->kind, f->severity, f->knob, f->source, "%s", f->summary))
                        r = -ENOMEM;
        }
        finding_list_done(&all);
        return r;
}

int tuner_measure(Tuner *t, const Config *c, const char *name, const MeasureOptions *o, MeasureReport *r,
                  const char **ret_why) {
        _cleanup_strv_free_ char **names = NULL;
        char *current[_KNOB_MAX] = {}, *start[_KNOB_MAX] = {};
        int targets[_KNOB_MAX];
        DeviceList l = {};
        Plan plan = {};
        ProbeDisk pd = {.fd = -1};
        const char *bad = NULL;
        bool held = false;
        int q;

        assert(t);
        assert(c);
        assert(name);
        assert(o);
        assert(r);
        assert(ret_why);
        assert(o->n_depths >= 1 && o->n_depths <= MEASURE_MAX_DEPTHS);
        assert(o->rounds >= 1 && o->rounds <= MEASURE_MAX_ROUNDS);

        *ret_why = NULL;
        *r = (MeasureReport){.disk = strdup(name)};
        if (!r->disk || strv_extend(&names, name) < 0)
                return -ENOMEM;
        q = tuner_lookup(t, names, &l, &bad);
        if (q < 0)
                return q; /* tuner_lookup()'s -errno: the caller says why */
        q = tuner_plan(t, c, names, &l, &plan, targets);
        if (q < 0) {
                *ret_why = q == -ENOMEM ? NULL : "cannot plan it";
                return q;
        }
        const DevicePlan *dp = plan.devices[0];
        const Device *d = dp->device;
        r->model = strdup_or_null(d->model);
        r->serial = strdup_or_null(d->serial);
        r->profile = strdup_or_null(dp->profile);
        r->rule = strdup_or_null(dp->rule);
        r->pinned = dp->rule && streq(dp->rule, "IOTUNED_PROFILE");
        q = health_critical(d, &r->health);
        if (q < 0)
                goto out;

        if (dp->excluded || !dp->profile) {
                /* static text: the plan (and its error) is freed below */
                *ret_why = dp->error ? "it cannot be tuned as configured (see iotunectl explain)"
                                     : "a rule excludes this disk from tuning";
                q = -EPERM;
                goto out;
        }
        if (!d->devnode || !d->has_mq) {
                *ret_why = !d->devnode ? "it has no device node (a hidden multipath path): measure its head"
                                       : "it is not a blk-mq disk: it has none of the knobs measured";
                q = -ENOTBLK;
                goto out;
        }

        if (o->hipri && !d->io_poll) {
                *ret_why = "--hipri needs poll queues, and this disk has none (queue/io_poll is 0): see poll_queues "
                           "in iotuned.profile(5)";
                q = -EOPNOTSUPP;
                goto out;
        }

        /* Busy: two samples of its stat a second apart. */
        BlockStat a, b;
        q = blockstat_read(d->syspath, &a);
        if (q >= 0) {
                (void) usleep(BUSY_SAMPLE_USEC);
                q = blockstat_read(d->syspath, &b);
        }
        if (q >= 0)
                q = blockstat_load(&a, &b, &r->load);
        if (q < 0) {
                *ret_why = "cannot read its I/O statistics (stat)";
                goto out;
        }
        if (r->load.utilisation > o->busy_utilisation && !o->force) {
                q = -EBUSY;
                goto out;
        }

        q = io_probe_open(d->devnode, &pd);
        if (q < 0) {
                *ret_why = "cannot open it for O_DIRECT reads";
                goto out;
        }
        ProbeSpec check = {
                .block_size = o->block_size, .depth = o->depths[0], .offset = o->offset, .length = o->length};
        q = io_probe_check(&pd, &check, ret_why);
        if (q < 0)
                goto out;

        q = prepare_trials(dp, d, o, r, current, start);
        if (q < 0)
                goto out;

        held = true;
        for (size_t ti = 0; ti < r->n_trials; ti++) {
                if (r->trials[ti].skipped)
                        continue;
                q = measure_knob(t, name, &pd, o, r, ti, current, ret_why);
                if (q < 0)
                        break;
        }
        if (q == -EINTR)
                r->interrupted = true;

out:
        if (held) {
                /* Back to where the disk was, through the same path; then the daemon may look again. */
                int rq = apply_values(t, name, start, _KNOB_INVALID, NULL, NULL);
                if (rq < 0)
                        (void) asprintf_safe(&r->restore_error, "putting the values back failed: %s", strerror(-rq));
                rq = hold_release(t->hold_dir, name);
                if (rq < 0)
                        log_warning_errno(rq, "Cannot remove the hold of %s: %m (it expires by itself)", name);
        }
        io_probe_close(&pd);
        for (size_t k = 0; k < _KNOB_MAX; k++) {
                free(current[k]);
                free(start[k]);
        }
        plan_done(&plan);
        return q;
}
