/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

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
/* The textfile's directory must be a directory owned by `owner` (root for the
 * daemon) that neither group nor others may write: -EPERM (or the stat error,
 * -ENOTDIR) otherwise, with *ret_reason naming the directory, its owner and mode. */
int metrics_check_dir(const char *path, uid_t owner, char **ret_reason);

/* metrics_check_dir(path, 0), then the file, written with an O_EXCL temporary. */
int metrics_write(const char *path, const Config *c, const Plan *p, const MetricsCounters *m, char **ret_reason);
