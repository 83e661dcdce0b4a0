/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The statistic `iotunectl tune` decides with (iotunectl(8), "Measured tuning").
 *
 * A candidate and the baseline are measured in the same rounds, in alternating
 * order, so each round gives one paired relative gain
 *     g_r = (candidate_r - baseline_r) / baseline_r
 * signed so that positive is better (more IOPS, lower latency). A candidate is
 * better when the rounds favouring it are too many for chance - an exact
 * one-sided sign test, P(at least that many of n rounds | no difference) <=
 * alpha (7 of 7 rounds: 0.008; 6 of 7: 0.0625) - and the median gain is at
 * least the minimum effect; worse likewise. The median's 95% interval, a
 * percentile bootstrap (STATS_BOOTSTRAP resamples of the rounds, fixed seed:
 * the same samples give the same numbers), is reported beside it. */
#define STATS_BOOTSTRAP 4000
#define STATS_MAX_ROUNDS 64

typedef struct PairedEffect {
        double median; /* median gain over the rounds, positive = better */
        double low;    /* its 95% bootstrap interval */
        double high;
        unsigned rounds;
        unsigned favour;  /* rounds with a gain above zero */
        unsigned against; /* rounds with a gain below zero */
} PairedEffect;

typedef enum EffectVerdict {
        EFFECT_TIE, /* the rounds could agree by chance, or the effect is below the minimum */
        EFFECT_BETTER,
        EFFECT_WORSE,
} EffectVerdict;

/* ret_gains[i] = the signed relative gain of candidate[i] over baseline[i];
 * 1 <= n <= STATS_MAX_ROUNDS, every baseline > 0; -EINVAL on bad input.
 * higher_is_better: IOPS; false for latency. */
int paired_gains(const double *candidate, const double *baseline, size_t n, bool higher_is_better, double *ret_gains);

/* The median of n gains, its bootstrap interval and the sign counts. */
int gains_effect(const double *gains, size_t n, PairedEffect *ret);

/* paired_gains() then gains_effect(). */
int paired_effect(const double *candidate, const double *baseline, size_t n, bool higher_is_better, PairedEffect *ret);

/* The one-sided sign test: P(at least k of n fair coin flips), 0 < n <= STATS_MAX_ROUNDS. */
double sign_test_p(unsigned k, unsigned n);

/* min_effect: the smallest relative change worth acting on (0.05 = 5%); alpha:
 * the sign test's level (0.01). */
EffectVerdict effect_verdict(const PairedEffect *e, double min_effect, double alpha);
const char *effect_verdict_to_string(EffectVerdict v);

/* The median of n values (n >= 1); `v` is reordered. */
double median_of(double *v, size_t n);
