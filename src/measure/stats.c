/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

double median_of(double *v, size_t n) {
        assert(v);
        assert(n >= 1);

        qsort(v, n, sizeof(double), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* xorshift64*: a fixed, portable stream, so a verdict is reproducible. */
static uint64_t next_random(uint64_t *state) {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        return *state * 0x2545F4914F6CDD1DULL;
}

int paired_gains(const double *candidate, const double *baseline, size_t n, bool higher_is_better, double *ret_gains) {
        assert(candidate);
        assert(baseline);
        assert(ret_gains);

        if (n < 1 || n > STATS_MAX_ROUNDS)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!(baseline[i] > 0) || !isfinite(candidate[i]) || !isfinite(baseline[i]) || candidate[i] < 0)
                        return -EINVAL;
                double rel = (candidate[i] - baseline[i]) / baseline[i];
                ret_gains[i] = higher_is_better ? rel : -rel;
        }
        return 0;
}

int gains_effect(const double *gains, size_t n, PairedEffect *ret) {
        double sample[STATS_MAX_ROUNDS];
        double medians[STATS_BOOTSTRAP]; /* 32 KiB */
        uint64_t seed = 0x9E3779B97F4A7C15ULL;

        assert(gains);
        assert(ret);

        if (n < 1 || n > STATS_MAX_ROUNDS)
                return -EINVAL;
        *ret = (PairedEffect){.rounds = (unsigned) n};
        for (size_t i = 0; i < n; i++) {
                if (!isfinite(gains[i]))
                        return -EINVAL;
                sample[i] = gains[i];
                ret->favour += gains[i] > 0;
                ret->against += gains[i] < 0;
        }
        ret->median = median_of(sample, n);

        for (size_t b = 0; b < STATS_BOOTSTRAP; b++) {
                for (size_t i = 0; i < n; i++)
                        sample[i] = gains[next_random(&seed) % n];
                medians[b] = median_of(sample, n);
        }
        qsort(medians, STATS_BOOTSTRAP, sizeof(double), cmp_double);
        ret->low = medians[(size_t) (0.025 * STATS_BOOTSTRAP)];
        ret->high = medians[(size_t) (0.975 * STATS_BOOTSTRAP) - 1];
        return 0;
}

int paired_effect(const double *candidate, const double *baseline, size_t n, bool higher_is_better, PairedEffect *ret) {
        double g[STATS_MAX_ROUNDS];
        int r = paired_gains(candidate, baseline, n, higher_is_better, g);
        return r < 0 ? r : gains_effect(g, n, ret);
}

double sign_test_p(unsigned k, unsigned n) {
        double c = 1, p = 0; /* c = C(n, i) */

        assert(n > 0 && n <= STATS_MAX_ROUNDS);
        for (unsigned i = 0; i <= n; i++) {
                if (i >= k)
                        p += c;
                c = c * (double) (n - i) / (double) (i + 1);
        }
        return p / ldexp(1.0, (int) n);
}

EffectVerdict effect_verdict(const PairedEffect *e, double min_effect, double alpha) {
        assert(e);

        if (e->rounds == 0)
                return EFFECT_TIE;
        if (sign_test_p(e->favour, e->rounds) <= alpha && e->median >= min_effect)
                return EFFECT_BETTER;
        if (sign_test_p(e->against, e->rounds) <= alpha && e->median <= -min_effect)
                return EFFECT_WORSE;
        return EFFECT_TIE;
}

const char *effect_verdict_to_string(EffectVerdict v) {
        switch (v) {
        case EFFECT_BETTER:
                return "better";
        case EFFECT_WORSE:
                return "worse";
        default:
                return "tie";
        }
}
