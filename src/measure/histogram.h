/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* A latency histogram with log-linear buckets (the HDR histogram's layout):
 * values below 2^(HIST_SUB_BITS+1) ns are counted exactly, above that each
 * power-of-two range is split into 2^HIST_SUB_BITS equal buckets, so every
 * bucket is narrower than 1/2^HIST_SUB_BITS (3.1%) of the values in it, from
 * nanoseconds to HIST_MAX_NSEC. Recording is O(1) and needs no allocation;
 * percentiles come from the counts, never from a sorted sample. */
#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS) /* 32 buckets per power of two */
#define HIST_LINEAR (2u * HIST_SUB)    /* 0..63 ns exact */
#define HIST_MAX_SHIFT 35              /* up to 2^41 ns (about 36 minutes) */
#define HIST_BUCKETS (HIST_LINEAR + HIST_MAX_SHIFT * HIST_SUB)

typedef struct Histogram {
        uint64_t count;
        uint64_t sum_nsec;
        uint64_t min_nsec;
        uint64_t max_nsec;
        uint64_t buckets[HIST_BUCKETS];
} Histogram;

void hist_init(Histogram *h);
void hist_record(Histogram *h, uint64_t nsec);
/* Adds the counts of `from` to `h`. */
void hist_merge(Histogram *h, const Histogram *from);

/* The bucket `nsec` is counted in, and a bucket's bounds [*ret_low, *ret_high). */
unsigned hist_bucket_of(uint64_t nsec);
void hist_bucket_bounds(unsigned bucket, uint64_t *ret_low, uint64_t *ret_high);

/* The value at percentile p (0 < p <= 100): the middle of the bucket that holds
 * the ceil(p/100 * count)-th smallest value, clamped to [min, max]; exact below
 * HIST_LINEAR ns. 0 for an empty histogram. */
uint64_t hist_percentile(const Histogram *h, double p);
