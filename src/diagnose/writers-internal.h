/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the parts of writers.h share, and nothing else: writers.c holds the entry
 * points, writers-common.c the list and the helpers below it, writers-udev.c the
 * udev rules, writers-tuned.c the TuneD profiles, writers-procs.c the processes.
 * The scans call only down into writers-common.c. Not for use outside diagnose/. */

#include <stdbool.h>
#include <stddef.h>

#include "device.h"
#include "macro.h"
#include "writers.h"

/* Caps on what a hostile or broken tree can make us read (each scan has its own
 * too, next to its code). */
#define RULES_FILE_MAX (1024 * 1024) /* bytes per rules file or tuned.conf; larger ones are skipped */
#define LINE_MAX_LEN 16384           /* one logical line; udev's own limit (UDEV_LINE_SIZE) */

/* What we know of the disk for evaluating rules. */
typedef struct MatchCtx {
        const Device *d;
        bool sys_ok; /* d->syspath is a readable directory */
} MatchCtx;

typedef struct Procs {
        int *tuned, *irqbalance, *iotuned;
        size_t n_tuned, n_irqbalance, n_iotuned;
        bool readable;
} Procs;

/* Append a copy of *w (its strings copied). -ENOMEM. */
int writer_add(WriterList *l, const Writer *w);

/* Append to a "; "-separated text. -ENOMEM. */
int writers_text_append(char **s, const char *fmt, ...) _printf_(2, 3);

/* The DEVPATH udev would see: d->syspath from its /devices/ on, or NULL. */
const char *writers_devpath_of(const char *syspath);

/* The udev rules under root that write one of c->d's knobs, appended to out.
 * 0, or -ENOMEM. */
int writers_udev_scan(const char *root, const MatchCtx *c, WriterList *out);

/* The tuned, irqbalance and (other) iotuned processes under root's /proc. 0, or
 * -ENOMEM; an unreadable /proc leaves *ret empty with readable false. */
int writers_procs_scan(const char *root, Procs *ret);
void writers_procs_done(Procs *p);

/* The writers that the processes in p are (irqbalance, another iotuned). */
int writers_process_writers(const Procs *p, WriterList *out);

/* The active TuneD profile's entries that write one of d's knobs. 0, or -ENOMEM. */
int writers_tuned_scan(const char *root, const Device *d, const Procs *procs, WriterList *out);
