/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `iotunectl tune`: measured tuning (src/tuner/measure.c) as a command: its
 * options, progress, the table, the proposed drop-in and its diff. */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "escape.h"
#include "fileio.h"
#include "log.h"
#include "io-probe.h"
#include "measure.h"
#include "plan-json.h"
#include "rootfs.h"
#include "util.h"

#define MEASURED_DROPIN_DIR IOTUNED_ETC_DIR "/iotuned.yaml.d"

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
        (void) sig;
        stop_requested = 1;
}

bool cli_tune_args_given(const TuneArgs *a) {
        assert(a);
        return a->knobs || a->depths || a->block_size || a->rounds || a->runtime || a->warmup || a->range ||
               a->min_effect || a->alpha || a->busy || a->plot || a->hipri || a->force || a->write;
}

static int bad_option(const char *option, const char *value, const char *expected) {
        log_error("%s '%s': %s.", option, esc(value), expected);
        return -EINVAL;
}

static int parse_percent(const char *option, const char *value, double min, double max, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v < min || v > max) {
                char expected[96];
                (void) snprintf(expected, sizeof(expected), "expected a percentage from %g to %g, e.g. 5", min, max);
                return bad_option(option, value, expected);
        }
        *ret = v / 100.0;
        return 0;
}

static int parse_knobs(const char *value, unsigned *ret, bool *ret_poll) {
        _cleanup_free_ char *copy = strdup(value);
        unsigned mask = 0;
        bool poll = false;

        if (!copy)
                return log_oom();
        for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (streq(w, "poll")) {
                        poll = true;
                        continue;
                }
                const Knob *k = knob_by_name(w);
                if (!k || !(MEASURE_KNOBS & KNOB_MASK(k->id)))
                        return bad_option("--knobs", w,
                                          "not a measured knob; expected a comma-separated list of scheduler, "
                                          "nr_requests, rq_affinity, nomerges, wbt_lat_usec, poll");
                mask |= KNOB_MASK(k->id);
        }
        if (!mask && !poll)
                return bad_option("--knobs", value, "expected at least one knob");
        *ret = mask;
        *ret_poll = poll;
        return 0;
}

static int parse_depths(const char *value, MeasureOptions *o) {
        _cleanup_free_ char *copy = strdup(value);

        if (!copy)
                return log_oom();
        o->n_depths = 0;
        for (char *save = NULL, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                unsigned d;
                if (safe_atou(w, &d) < 0 || d < 1 || d > IO_PROBE_MAX_DEPTH)
                        return bad_option("--depths", w, "expected queue depths from 1 to 1024, e.g. 1,32");
                if (o->n_depths == MEASURE_MAX_DEPTHS)
                        return bad_option("--depths", value, "at most 4 queue depths");
                o->depths[o->n_depths++] = d;
        }
        if (o->n_depths == 0)
                return bad_option("--depths", value, "expected at least one queue depth, e.g. 1,32");
        return 0;
}

static int parse_duration(const char *option, const char *value, uint64_t min, uint64_t max, uint64_t *ret) {
        if (parse_duration_usec(value, ret) < 0 || *ret < min || *ret > max) {
                char expected[96];
                (void) snprintf(expected, sizeof(expected), "expected a duration from %llu ms to %llu s, e.g. 2s",
                                (unsigned long long) (min / 1000), (unsigned long long) (max / 1000000));
                return bad_option(option, value, expected);
        }
        return 0;
}

static int parse_options(const TuneArgs *a, MeasureOptions *o) {
        uint64_t size;
        int r;

        *o = (MeasureOptions){
                .block_size = 4096,
                .depths = {1, 32},
                .n_depths = 2,
                .rounds = 7,
                .runtime_usec = 1000000,
                .warmup_usec = 200000,
                .min_effect = 0.05,
                .alpha = 0.01,
                .knobs = MEASURE_KNOBS,
                .poll = true,
                .busy_utilisation = 0.05,
                .force = a->force,
                .hipri = a->hipri,
        };
        if (a->knobs && (r = parse_knobs(a->knobs, &o->knobs, &o->poll)) < 0)
                return r;
        if (a->depths && (r = parse_depths(a->depths, o)) < 0)
                return r;
        if (a->block_size) {
                if (parse_size(a->block_size, &size) < 0 || size == 0 || size % 512 != 0 || size > 16U << 20)
                        return bad_option("--block-size", a->block_size,
                                          "expected a multiple of 512 bytes up to 16M, e.g. 4K");
                o->block_size = (unsigned) size;
        }
        if (a->rounds && (safe_atou(a->rounds, &o->rounds) < 0 || o->rounds < 3 || o->rounds > MEASURE_MAX_ROUNDS))
                return bad_option("--rounds", a->rounds, "expected 3 to 32 rounds");
        if (a->runtime && (r = parse_duration("--runtime", a->runtime, 100000, 600000000, &o->runtime_usec)) < 0)
                return r;
        if (a->warmup && (r = parse_duration("--warmup", a->warmup, 0, 60000000, &o->warmup_usec)) < 0)
                return r;
        if (a->range) {
                const char *colon = strchr(a->range, ':');
                _cleanup_free_ char *off = colon ? strndup(a->range, colon - a->range) : NULL;
                if (!colon || !off || parse_size(off, &o->offset) < 0 || parse_size(colon + 1, &o->length) < 0 ||
                    o->length == 0)
                        return bad_option("--range", a->range, "expected OFFSET:LENGTH in bytes, e.g. 0:1G");
        }
        if (a->min_effect && (r = parse_percent("--min-effect", a->min_effect, 0.1, 100, &o->min_effect)) < 0)
                return r;
        if (a->busy && (r = parse_percent("--busy", a->busy, 0, 100, &o->busy_utilisation)) < 0)
                return r;
        if (a->alpha) {
                char *end;
                errno = 0;
                o->alpha = strtod(a->alpha, &end);
                if (errno || end == a->alpha || *end || !(o->alpha > 0 && o->alpha <= 0.2))
                        return bad_option("--alpha", a->alpha,
                                          "expected a significance level above 0, at most 0.2, e.g. 0.01");
        }
        if (sign_test_p(o->rounds, o->rounds) > o->alpha) {
                log_error(
                        "--rounds %u cannot reach --alpha %g: even %u of %u rounds favouring a candidate has p = %.3g. "
                        "Give more rounds.",
                        o->rounds, o->alpha, o->rounds, o->rounds, sign_test_p(o->rounds, o->rounds));
                return -EINVAL;
        }
        return 0;
}

static void format_duration(uint64_t usec, char *buf, size_t size) {
        uint64_t s = (usec + 500000) / 1000000;
        if (s >= 60)
                (void) snprintf(buf, size, "%llum%02llus", (unsigned long long) (s / 60),
                                (unsigned long long) (s % 60));
        else
                (void) snprintf(buf, size, "%llus", (unsigned long long) s);
}

/* One line on the terminal, rewritten in place. */
static void on_progress(const MeasureProgress *p, void *userdata) {
        char left[32];
        (void) userdata;

        format_duration(p->left_usec, left, sizeof(left));
        fprintf(stderr, "\r\033[K%s: %s=%s, round %u/%u, QD%u; about %s left", p->disk, p->knob, p->candidate, p->round,
                p->rounds, p->depth, left);
        fflush(stderr);
}

static double median_rounds(const double *v, unsigned n) {
        double copy[MEASURE_MAX_ROUNDS];
        memcpy(copy, v, n * sizeof(double));
        return median_of(copy, n);
}

static void print_effect(const PairedEffect *e) {
        printf("%+.0f%% [%+.0f%%, %+.0f%%]", e->median * 100, e->low * 100, e->high * 100);
}

static void print_report(const MeasureReport *r, const MeasureOptions *o) {
        /* A drive in thermal trouble first: what follows may measure its thermals. */
        for (size_t i = 0; i < r->health.n; i++)
                printf("%s: %s: %s\n", r->disk, r->health.items[i].kind, r->health.items[i].summary);

        printf("%s (%s%s%s) profile %s (%s)\n", r->disk, r->model ?: "no model", r->serial ? ", serial " : "",
               r->serial ?: "", r->profile ?: "-", r->rule ?: "-");
        printf("  load before: %.1f%% utilised, %.0f IOPS; %u-byte random reads, %u rounds of %.1f s per depth\n",
               r->load.utilisation * 100, r->load.iops, o->block_size, o->rounds, (double) o->runtime_usec / 1e6);
        for (size_t i = 0; i < r->n_trials; i++) {
                const KnobTrial *kt = &r->trials[i];
                const char *name = knob_trial_name(kt);

                if (kt->skipped) {
                        printf("\n  %s: not measured: %s\n", name, kt->skipped);
                        continue;
                }
                if (!kt->judged && r->interrupted) {
                        printf("\n  %s: interrupted before its rounds were done: not judged\n", name);
                        continue;
                }
                if (!kt->judged) {
                        printf("\n  %s: not measured (stopped before it)\n", name);
                        continue;
                }
                printf("\n  %s (baseline %s, from the %s)\n", name, kt->candidates[0].value, kt->from);
                printf("    %-12s %5s %9s %9s %9s %9s  %s\n", "candidate", "QD", "IOPS", "p50 us", "p99 us", "p99.9 us",
                       "verdict");
                for (size_t c = 0; c < kt->n; c++) {
                        const Candidate *cd = &kt->candidates[c];
                        if ((cd->verdict == CANDIDATE_FAILED || cd->verdict == CANDIDATE_SAME) &&
                            !cd->depth[0].latency.count) {
                                printf("    %-12s %5s %9s %9s %9s %9s  %s: %s\n", cd->value, "-", "-", "-", "-", "-",
                                       candidate_verdict_to_string(cd->verdict), cd->note ?: "");
                                continue;
                        }
                        for (size_t q = 0; q < o->n_depths; q++) {
                                const DepthResult *dr = &cd->depth[q];
                                printf("    %-12s %5u %9.0f %9.1f %9.1f %9.1f  ", q == 0 ? cd->value : "", o->depths[q],
                                       median_rounds(dr->iops, r->rounds_done ?: 1),
                                       hist_percentile(&dr->latency, 50) / 1000.0,
                                       hist_percentile(&dr->latency, 99) / 1000.0,
                                       hist_percentile(&dr->latency, 99.9) / 1000.0);
                                if (c == 0)
                                        printf("%s", q == 0 ? "baseline" : "");
                                else if (cd->verdict == CANDIDATE_FAILED || cd->verdict == CANDIDATE_SAME)
                                        printf("%s", q == 0 ? cd->note ?: "failed" : "");
                                else {
                                        printf("IOPS ");
                                        print_effect(&dr->iops_effect);
                                        printf(", p99 ");
                                        print_effect(&dr->p99_effect);
                                        if (q == 0) {
                                                printf("  %s, all measures ", candidate_verdict_to_string(cd->verdict));
                                                print_effect(&cd->combined);
                                                printf(" (%u/%u rounds)", cd->combined.favour, cd->combined.rounds);
                                        }
                                }
                                printf("\n");
                        }
                }
                if (kt->poll && kt->chosen)
                        printf("    -> poll: polled reads win beyond the noise: applications that poll (io_uring "
                               "IOPOLL, RWF_HIPRI) gain;\n       keep this disk's poll queues (poll_queues)\n");
                else if (kt->poll)
                        printf("    -> poll: polled reads do not win beyond the noise here\n");
                else if (kt->chosen)
                        printf("    -> %s: %s wins beyond the noise\n", name, kt->candidates[kt->chosen].value);
                else
                        printf("    -> %s: keep %s (no candidate won beyond the noise)\n", name,
                               kt->candidates[0].value);
        }
        if (r->restore_error)
                printf("\n  WARNING: %s\n", r->restore_error);
        else
                printf("\n  every value measured is back as it was\n");
}

static json_object *effect_json(const PairedEffect *e) {
        json_object *j = json_object_new_object();
        if (!j)
                return NULL;
        json_object_object_add(j, "median", json_object_new_double(e->median));
        json_object_object_add(j, "low", json_object_new_double(e->low));
        json_object_object_add(j, "high", json_object_new_double(e->high));
        return j;
}

static json_object *report_json(const MeasureReport *r, const MeasureOptions *o) {
        json_object *d = json_object_new_object(), *knobs = json_object_new_array(), *load = json_object_new_object();

        if (!d || !knobs || !load) {
                json_object_put(d);
                json_object_put(knobs);
                json_object_put(load);
                return NULL;
        }
        json_object_object_add(d, "device", json_object_new_string(r->disk));
        json_object_object_add(d, "health", report_findings_json(&r->health));
        json_object_object_add(d, "model", r->model ? json_object_new_string(r->model) : NULL);
        json_object_object_add(d, "serial", r->serial ? json_object_new_string(r->serial) : NULL);
        json_object_object_add(d, "profile", r->profile ? json_object_new_string(r->profile) : NULL);
        json_object_object_add(d, "rule", r->rule ? json_object_new_string(r->rule) : NULL);
        json_object_object_add(load, "utilisation", json_object_new_double(r->load.utilisation));
        json_object_object_add(load, "iops", json_object_new_double(r->load.iops));
        json_object_object_add(d, "load_before", load);
        json_object_object_add(d, "rounds", json_object_new_int((int) r->rounds_done));
        json_object_object_add(d, "interrupted", json_object_new_boolean(r->interrupted));
        json_object_object_add(d, "restored", json_object_new_boolean(!r->restore_error));
        json_object_object_add(d, "restore_error", r->restore_error ? json_object_new_string(r->restore_error) : NULL);
        for (size_t i = 0; i < r->n_trials; i++) {
                const KnobTrial *kt = &r->trials[i];
                json_object *k = json_object_new_object(), *cands = json_object_new_array();
                if (!k || !cands) {
                        json_object_put(k);
                        json_object_put(cands);
                        json_object_put(d);
                        return NULL;
                }
                json_object_object_add(k, "knob", json_object_new_string(knob_trial_name(kt)));
                json_object_object_add(k, "skipped", kt->skipped ? json_object_new_string(kt->skipped) : NULL);
                json_object_object_add(k, "judged", json_object_new_boolean(kt->judged));
                json_object_object_add(k, "baseline_from", kt->from ? json_object_new_string(kt->from) : NULL);
                json_object_object_add(k, "chosen",
                                       kt->n ? json_object_new_string(kt->candidates[kt->chosen].value) : NULL);
                json_object_object_add(k, "changed", json_object_new_boolean(kt->chosen != 0 && !kt->poll));
                for (size_t c = 0; c < kt->n; c++) {
                        const Candidate *cd = &kt->candidates[c];
                        json_object *cj = json_object_new_object(), *depths = json_object_new_array();
                        if (!cj || !depths) {
                                json_object_put(cj);
                                json_object_put(depths);
                                json_object_put(k);
                                json_object_put(cands);
                                json_object_put(d);
                                return NULL;
                        }
                        json_object_object_add(cj, "value", json_object_new_string(cd->value));
                        json_object_object_add(cj, "observed",
                                               cd->observed ? json_object_new_string(cd->observed) : NULL);
                        json_object_object_add(cj, "verdict",
                                               json_object_new_string(candidate_verdict_to_string(cd->verdict)));
                        json_object_object_add(cj, "note", cd->note ? json_object_new_string(cd->note) : NULL);
                        if (c > 0 && cd->verdict != CANDIDATE_FAILED && cd->verdict != CANDIDATE_SAME) {
                                json_object *g = effect_json(&cd->combined);
                                if (g)
                                        json_object_object_add(g, "rounds_favouring",
                                                               json_object_new_int((int) cd->combined.favour));
                                json_object_object_add(cj, "gain", g);
                        }
                        for (size_t q = 0; cd->depth[0].latency.count && q < o->n_depths; q++) {
                                const DepthResult *dr = &cd->depth[q];
                                json_object *dj = json_object_new_object(), *iops = json_object_new_array();
                                if (!dj || !iops) {
                                        json_object_put(dj);
                                        json_object_put(iops);
                                        continue;
                                }
                                for (unsigned i2 = 0; i2 < r->rounds_done; i2++)
                                        json_object_array_add(iops, json_object_new_double(dr->iops[i2]));
                                json_object_object_add(dj, "depth", json_object_new_int((int) o->depths[q]));
                                json_object_object_add(dj, "iops_per_round", iops);
                                json_object_object_add(dj, "reads", json_object_new_int64((int64_t) dr->latency.count));
                                json_object_object_add(
                                        dj, "p50_usec",
                                        json_object_new_double(hist_percentile(&dr->latency, 50) / 1000.0));
                                json_object_object_add(
                                        dj, "p99_usec",
                                        json_object_new_double(hist_percentile(&dr->latency, 99) / 1000.0));
                                json_object_object_add(
                                        dj, "p999_usec",
                                        json_object_new_double(hist_percentile(&dr->latency, 99.9) / 1000.0));
                                if (c > 0 && cd->verdict != CANDIDATE_FAILED && cd->verdict != CANDIDATE_SAME) {
                                        json_object_object_add(dj, "iops_gain", effect_json(&dr->iops_effect));
                                        json_object_object_add(dj, "p99_gain", effect_json(&dr->p99_effect));
                                }
                                json_object_array_add(depths, dj);
                        }
                        json_object_object_add(cj, "depths", depths);
                        json_object_array_add(cands, cj);
                }
                json_object_object_add(k, "candidates", cands);
                json_object_array_add(knobs, k);
        }
        json_object_object_add(d, "knobs", knobs);
        return d;
}

/* A YAML double-quoted scalar matching exactly `s` as a rule's glob: NULL for
 * an empty string, one with characters outside printable ASCII or with glob
 * characters (the caller matches on something else then). */
static char *yaml_glob_literal(const char *s) {
        size_t n = strlen(s);
        char *out = malloc(2 * n + 3), *p = out;

        if (!out || n == 0)
                return free(out), NULL;
        *p++ = '"';
        for (const char *c = s; *c; c++) {
                if (*c < 0x20 || *c > 0x7e)
                        return free(out), NULL;
                if (strchr("*?[]\\", *c))
                        return free(out), NULL;
                if (*c == '"')
                        *p++ = '\\';
                *p++ = *c;
        }
        *p++ = '"';
        *p = 0;
        return out;
}

/* The file name's part after "60-measured-": the identity, with anything but
 * [A-Za-z0-9._-] made '_'. */
static char *file_part(const char *id) {
        char *s = strdup(id);
        if (!s)
                return NULL;
        for (char *c = s; *c; c++)
                if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') || ('0' <= *c && *c <= '9') ||
                      strchr("._-", *c)))
                        *c = '_';
        return s;
}

static bool report_changes(const MeasureReport *r) {
        for (size_t i = 0; i < r->n_trials; i++)
                if (r->trials[i].chosen && !r->trials[i].poll)
                        return true;
        return false;
}

/* The drop-in for the winners of `r`: its path (inside the root) and text. */
static int proposal(Cli *c, const MeasureReport *r, const MeasureOptions *o, char **ret_path, char **ret_text) {
        _cleanup_free_ char *key = NULL, *literal = NULL, *part = NULL, *path = NULL, *name = NULL, *text = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t size = 0;
        char when[64];
        time_t now = time(NULL);
        struct tm tm;

        if (r->serial && (literal = yaml_glob_literal(r->serial)))
                key = strdup("serial");
        else if (r->model && (literal = yaml_glob_literal(r->model)))
                key = strdup("model");
        else if ((literal = yaml_glob_literal(r->disk)))
                key = strdup("kernel");
        if (!key || !literal)
                return -ENOMEM;
        part = file_part(streq(key, "kernel") ? r->disk : streq(key, "serial") ? r->serial : r->model);
        if (!part || asprintf_safe(&name, "60-measured-%s.yaml", part) < 0 ||
            asprintf_safe(&path, "%s/%s", MEASURED_DROPIN_DIR, name) < 0)
                return -ENOMEM;
        (void) strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "# Written by `iotunectl tune %s --write` on %s.\n", r->disk, when);
        fprintf(f, "# %u-byte O_DIRECT random reads at queue depth", o->block_size);
        for (size_t q = 0; q < o->n_depths; q++)
                fprintf(f, "%s %u", q ? "," : "", o->depths[q]);
        fprintf(f,
                ", %u rounds of %.1f s; a value is\n# changed only when it won the rounds beyond chance, by at least "
                "%.0f%% (median over IOPS and p99), worse on none.\n",
                o->rounds, (double) o->runtime_usec / 1e6, o->min_effect * 100);
        if (streq(key, "kernel"))
                fprintf(f, "# The disk has no serial or model: matched by its kernel name, which can change.\n");
        for (size_t i = 0; i < r->n_trials; i++) {
                const KnobTrial *kt = &r->trials[i];
                if (!kt->chosen || kt->poll)
                        continue;
                const Candidate *w = &kt->candidates[kt->chosen];
                fprintf(f, "#   %s: %s over %s (the %s): %+.0f%%;", knob_trial_name(kt), w->value,
                        kt->candidates[0].value, kt->from, w->combined.median * 100);
                for (size_t q = 0; q < o->n_depths; q++)
                        fprintf(f, " QD%u IOPS %+.0f%%, p99 %+.0f%%;", o->depths[q],
                                w->depth[q].iops_effect.median * 100, w->depth[q].p99_effect.median * 100);
                fprintf(f, "\n");
        }
        if (r->pinned)
                fprintf(f, "# Note: IOTUNED_PROFILE pins this disk's profile, and then no rule applies.\n");
        fprintf(f, "rules:\n  - name: measured-%s\n    match: { %s: %s }\n    profile: %s\n    set:\n      queue:\n",
                part, key, literal, r->profile);
        for (size_t i = 0; i < r->n_trials; i++)
                if (r->trials[i].chosen && !r->trials[i].poll)
                        fprintf(f, "        %s: %s\n", knob_trial_name(&r->trials[i]),
                                r->trials[i].candidates[r->trials[i].chosen].value);
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        fclose(TAKE_PTR(f));

        int q = tuner_resolve(&c->tuner, path, ret_path);
        if (q < 0)
                return q;
        *ret_text = TAKE_PTR(text);
        return 0;
}

/* A whole-file unified diff: the old text (if any) out, the new one in. */
static void print_diff(const char *path, const char *old, const char *new) {
        size_t lines_old = 0, lines_new = 0;

        for (const char *p = old; p && *p; p++)
                lines_old += *p == '\n';
        for (const char *p = new; *p; p++)
                lines_new += *p == '\n';
        printf("--- %s\n+++ %s\n@@ -%s%zu +1,%zu @@\n", old ? path : "/dev/null", path, old ? "1," : "0,", lines_old,
               lines_new);
        for (int pass = 0; pass < 2; pass++) {
                const char *s = pass == 0 ? old : new;
                for (const char *p = s; p && *p;) {
                        size_t len = strcspn(p, "\n");
                        printf("%c%.*s\n", pass == 0 ? '-' : '+', (int) len, p);
                        p += len + (p[len] == '\n');
                }
        }
}

/* Write the drop-in, then load the configuration with it: a file the
 * configuration rejects is taken back out (the old one put back). */
static int write_proposal(Cli *c, const char *path, const char *old, const char *text) {
        _cleanup_(config_freep) Config *cfg = NULL;
        _cleanup_free_ char *dir = strndup(path, strrchr(path, '/') - path);
        Diag diag = {};
        int r;

        if (!dir)
                return log_oom();
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s: %m", esc(dir));
        r = write_file_atomic(path, text, strlen(text));
        if (r < 0)
                return log_error_errno(r, "Cannot write %s: %m", esc(path));
        r = tuner_load_config(&c->tuner, &cfg, &diag);
        if (r < 0) {
                diag_print(&diag, stderr);
                diag_done(&diag);
                if (old)
                        (void) write_file_atomic(path, old, strlen(old));
                else
                        (void) unlink(path);
                return log_error_errno(r, "The configuration does not accept %s; it was taken back out.", esc(path));
        }
        diag_done(&diag);
        return 0;
}

static int tune_one(Cli *c, const Config *cfg, const char *name, const MeasureOptions *o, json_object *devices,
                    bool *ret_interrupted, bool *ret_unrestored) {
        _cleanup_(measure_report_done) MeasureReport r = {};
        _cleanup_free_ char *path = NULL, *text = NULL, *old = NULL, *plot = NULL;
        const char *why = NULL;
        int q, ex = EXIT_OK;

        q = tuner_measure(&c->tuner, cfg, name, o, &r, &why);
        if (!c->json && isatty(STDERR_FILENO) && !c->quiet)
                fprintf(stderr, "\r\033[K");
        if (q == -EBUSY) {
                log_error("%s is busy: %.0f%% utilised, %.0f IOPS over the last %.1f s (limit %.0f%%). Measuring now "
                          "would disturb its users and be disturbed by them; --force measures anyway.",
                          name, r.load.utilisation * 100, r.load.iops, r.load.seconds, o->busy_utilisation * 100);
                return EXIT_BUSY;
        }
        if (q == -ENOENT || q == -ENODEV || q == -ENOTBLK || q == -EISDIR || (q == -EINVAL && !why))
                return why ? (log_error("%s: %s.", name, why), EXIT_NO_DEVICE) : cli_lookup_error(name, q);
        if (q == -EINTR) {
                *ret_interrupted = true;
                ex = EXIT_INTERRUPTED;
        } else if (q < 0) {
                if (why && (q == -EPERM || q == -EOPNOTSUPP || q == -EINVAL))
                        log_error("%s: %s.", name, why); /* a refusal: the errno adds nothing */
                else if (why)
                        log_error_errno(q, "%s: %s: %m", name, why);
                else
                        log_error_errno(q, "%s: measuring failed: %m", name);
                if (r.n_trials == 0)
                        return EXIT_FAILED;
                ex = EXIT_FAILED;
        }
        if (r.restore_error) {
                *ret_unrestored = true;
                ex = EXIT_FAILED;
        }

        if (q >= 0 && report_changes(&r)) {
                q = proposal(c, &r, o, &path, &text);
                if (q < 0)
                        return log_error_errno(q, "%s: cannot make the drop-in: %m", name), EXIT_FAILED;
                q = read_regular_file(path, 1 << 20, &old);
                if (q < 0 && q != -ENOENT)
                        return log_error_errno(q, "Cannot read %s: %m", esc(path)), EXIT_FAILED;
        }
        if (c->tune.plot && r.rounds_done > 0) {
                q = tune_plot_write(c->tune.plot, &r, o, &plot);
                if (q < 0) {
                        log_error_errno(q, "Cannot write the plot into %s: %m", esc(c->tune.plot));
                        ex = EXIT_FAILED;
                }
        }

        if (c->json) {
                json_object *d = report_json(&r, o);
                if (!d)
                        return log_oom(), EXIT_FAILED;
                json_object_object_add(d, "plot", plot ? json_object_new_string(plot) : NULL);
                if (text) {
                        json_object *p = json_object_new_object();
                        json_object_object_add(p, "path", json_object_new_string(path));
                        json_object_object_add(p, "content", json_object_new_string(text));
                        json_object_object_add(p, "written", json_object_new_boolean(c->tune.write && ex == EXIT_OK));
                        json_object_object_add(d, "proposal", p);
                } else
                        json_object_object_add(d, "proposal", NULL);
                json_object_array_add(devices, d);
        } else {
                print_report(&r, o);
                if (plot)
                        printf("  plot: %s\n", plot);
                if (text) {
                        printf("\n  proposed drop-in%s:\n", c->tune.write ? "" : " (not written; --write writes it)");
                        print_diff(path, old, text);
                } else if (ex == EXIT_OK)
                        printf("\n  nothing to propose: the profile's values held.\n");
        }
        if (text && c->tune.write && ex == EXIT_OK) {
                if (write_proposal(c, path, old, text) < 0)
                        return EXIT_FAILED;
                if (!c->json)
                        printf("\n  written: %s; 'systemctl reload iotuned' applies it.\n", path);
        }
        return ex;
}

int cli_tune(Cli *c, char **devices) {
        _cleanup_(config_freep) Config *cfg = NULL;
        struct sigaction sa = {.sa_handler = on_stop_signal}, old_int, old_term, old_hup;
        json_object *doc = NULL, *list = NULL;
        MeasureOptions o;
        bool interrupted = false, unrestored = false;
        int r, ex = EXIT_OK;

        assert(c);
        assert(devices);

        if (parse_options(&c->tune, &o) < 0)
                return EXIT_USAGE;
        r = cli_load_config(c, &cfg, NULL);
        if (r < 0)
                return cli_config_exit(r);
        if (c->tune.write && strv_length(devices) > 1) {
                /* one drop-in per drive: fine, but a reader should see which disk wrote which */
                log_debug("--write with %zu disks: one drop-in each.", strv_length(devices));
        }

        stop_requested = 0;
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, &old_int);
        (void) sigaction(SIGTERM, &sa, &old_term);
        (void) sigaction(SIGHUP, &sa, &old_hup);
        o.stop = &stop_requested;
        if (!c->json && !c->quiet && isatty(STDERR_FILENO))
                o.progress = on_progress;

        if (c->json) {
                doc = report_document_new("tune");
                list = json_object_new_array();
                if (!doc || !list) {
                        json_object_put(doc);
                        json_object_put(list);
                        return log_oom(), EXIT_FAILED;
                }
        }
        for (char **d = devices; *d && !interrupted; d++) {
                if (d != devices && !c->json)
                        printf("\n");
                int e = tune_one(c, cfg, *d, &o, list, &interrupted, &unrestored);
                if (e != EXIT_OK && (ex == EXIT_OK || e == EXIT_INTERRUPTED))
                        ex = e;
        }
        if (c->json) {
                json_object_object_add(doc, "devices", list);
                output_json_print(doc);
                json_object_put(doc);
        }
        (void) sigaction(SIGINT, &old_int, NULL);
        (void) sigaction(SIGTERM, &old_term, NULL);
        (void) sigaction(SIGHUP, &old_hup, NULL);
        if (interrupted)
                log_error("Interrupted: %s", unrestored ? "some values could not be put back (see above)."
                                                        : "every value measured is back as it was.");
        return ex;
}
