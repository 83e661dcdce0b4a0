/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A set of CPU numbers, sized to the highest CPU it holds. We parse cpulists
 * ourselves: libnuma's parser prints warnings and fails on CPUs that are absent,
 * and sysfs writes lists in two styles ("0-3,8" and the blk-mq "0, 1, 2"). */
typedef struct CpuSet {
        unsigned long *bits;
        size_t n_words;
} CpuSet;

void cpuset_done(CpuSet *s);
int cpuset_add(CpuSet *s, unsigned cpu);
bool cpuset_contains(const CpuSet *s, unsigned cpu);
size_t cpuset_count(const CpuSet *s);
bool cpuset_equal(const CpuSet *a, const CpuSet *b);
int cpuset_copy(CpuSet *dst, const CpuSet *src);
/* dst |= src */
int cpuset_or(CpuSet *dst, const CpuSet *src);
bool cpuset_intersects(const CpuSet *a, const CpuSet *b);
/* Largest CPU + 1, or 0 for an empty set. */
unsigned cpuset_span(const CpuSet *s);

/* Parse "0-3,8,10-11", "0, 1, 2", "" (empty set), with optional trailing newline.
 * -EINVAL on syntax errors (with nothing written to ret). */
int cpuset_parse(const char *s, CpuSet *ret);
/* Canonical cpulist: ascending, ranges of 2+ CPUs collapsed ("0-3,8"). "" if empty. */
int cpuset_format(const CpuSet *s, char **ret);
