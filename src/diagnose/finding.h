/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "macro.h"

/* What `iotunectl diagnose` and the daemon say about a disk: one finding per
 * thing seen, with a stable kind (the JSON "kind", the journal's FINDING=), a
 * one-line summary with its numbers, and the numbers themselves for machines.
 * Producers (writers.c, signals.c, health.c) only add to a list; they never log. */
typedef enum FindingSeverity {
        FINDING_INFO,     /* context: what was measured, nothing wrong */
        FINDING_NOTICE,   /* worth knowing: another writer that agrees, an idle poll queue */
        FINDING_WARNING,  /* a cause of lost performance or of a fight */
        FINDING_CRITICAL, /* the drive itself is in trouble (SMART critical warning, throttling) */
        _FINDING_SEVERITY_MAX,
} FindingSeverity;

const char *finding_severity_to_string(FindingSeverity s);

typedef struct FindingValue {
        char *name;       /* "await_ms", "queue_depth", "temperature_c" */
        double value;
} FindingValue;

typedef struct Finding {
        char *device;     /* the disk (nvme0n1) or controller (nvme0) it is about */
        char *kind;       /* stable identifier, e.g. "software-queue", "udev-rule-writer" */
        FindingSeverity severity;
        char *knob;       /* the knob it concerns ("scheduler", "irq 26"), or NULL */
        char *summary;    /* one line, with the numbers, no trailing period */
        char *source;     /* where it comes from: "/etc/udev/rules.d/60-sched.rules:3", or NULL */
        FindingValue *values;
        size_t n_values;
} Finding;

typedef struct FindingList {
        Finding *items;
        size_t n;
} FindingList;

void finding_list_done(FindingList *l);

/* Append a finding; returns it (owned by the list, valid until the next add) or
 * NULL on ENOMEM. knob and source may be NULL. */
Finding *finding_add(FindingList *l, const char *device, const char *kind, FindingSeverity severity,
                     const char *knob, const char *source, const char *fmt, ...) _printf_(7, 8);

/* Attach a number to a finding (for --json and the metrics). -ENOMEM. */
int finding_value(Finding *f, const char *name, double value);

/* Most severe first; within a severity, in the order added (stable). */
void finding_list_sort(FindingList *l);

/* The most severe finding's severity, FINDING_INFO for an empty list. */
FindingSeverity finding_list_worst(const FindingList *l);
