/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "histogram.h"

void hist_init(Histogram *h) {
        assert(h);
        memset(h, 0, sizeof(*h));
        h->min_nsec = UINT64_MAX;
}

unsigned hist_bucket_of(uint64_t nsec) {
        if (nsec < HIST_LINEAR)
                return (unsigned) nsec;
        /* bits >= HIST_SUB_BITS + 2: the top HIST_SUB_BITS + 1 bits select the bucket. */
        unsigned bits = 64 - (unsigned) __builtin_clzll(nsec);
        unsigned shift = bits - (HIST_SUB_BITS + 1);
        if (shift > HIST_MAX_SHIFT)
                return HIST_BUCKETS - 1;
        unsigned sub = (unsigned) (nsec >> shift) - HIST_SUB; /* 0..HIST_SUB-1 */
        return HIST_LINEAR + (shift - 1) * HIST_SUB + sub;
}

void hist_bucket_bounds(unsigned bucket, uint64_t *ret_low, uint64_t *ret_high) {
        assert(bucket < HIST_BUCKETS);
        assert(ret_low);
        assert(ret_high);

        if (bucket < HIST_LINEAR) {
                *ret_low = bucket;
                *ret_high = bucket + 1ULL;
                return;
        }
        unsigned shift = (bucket - HIST_LINEAR) / HIST_SUB + 1;
        uint64_t sub = (bucket - HIST_LINEAR) % HIST_SUB + HIST_SUB;
        *ret_low = sub << shift;
        *ret_high = (sub + 1) << shift;
}

void hist_record(Histogram *h, uint64_t nsec) {
        assert(h);

        h->buckets[hist_bucket_of(nsec)]++;
        h->count++;
        h->sum_nsec += nsec;
        if (nsec < h->min_nsec)
                h->min_nsec = nsec;
        if (nsec > h->max_nsec)
                h->max_nsec = nsec;
}

void hist_merge(Histogram *h, const Histogram *from) {
        assert(h);
        assert(from);

        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                h->buckets[i] += from->buckets[i];
        h->count += from->count;
        h->sum_nsec += from->sum_nsec;
        if (from->count && from->min_nsec < h->min_nsec)
                h->min_nsec = from->min_nsec;
        if (from->max_nsec > h->max_nsec)
                h->max_nsec = from->max_nsec;
}

uint64_t hist_percentile(const Histogram *h, double p) {
        assert(h);
        assert(p > 0 && p <= 100);

        if (h->count == 0)
                return 0;
        uint64_t rank = (uint64_t) ceil(p / 100.0 * (double) h->count);
        if (rank < 1)
                rank = 1;
        uint64_t seen = 0;
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->buckets[i];
                if (seen < rank)
                        continue;
                uint64_t low, high;
                hist_bucket_bounds(i, &low, &high);
                uint64_t v = low + (high - low) / 2;
                if (v < h->min_nsec)
                        v = h->min_nsec;
                if (v > h->max_nsec)
                        v = h->max_nsec;
                return v;
        }
        return h->max_nsec;
}
