/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "config.h"
#include "plan.h"

/* Prometheus text exposition for node_exporter's textfile collector, written
 * atomically (temp file + rename, so the collector never reads half a file). */
typedef struct MetricsCounters {
        unsigned drifts_corrected;
        unsigned conflicts;
        unsigned reload_failures;
        uint64_t last_reconcile_usec;   /* CLOCK_REALTIME */
} MetricsCounters;

int metrics_format(const Config *c, const Plan *p, const MetricsCounters *m, char **ret);
int metrics_write(const char *path, const Config *c, const Plan *p, const MetricsCounters *m);
