/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "plan.h"

/* The one JSON rendering of a reconciled plan: `iotunectl --json` prints it and
 * the daemon writes it to status.json, which status.h reads back. The schema is
 * documented in iotunectl(8); bump REPORT_SCHEMA_VERSION on breaking changes. */
#define REPORT_SCHEMA_VERSION 1

struct json_object;

/* {"version": REPORT_SCHEMA_VERSION, "command": command}; NULL on OOM. */
struct json_object *report_document_new(const char *command);

/* Adds "dry_run", "devices" and "summary" of `p` to the document `o`. -ENOMEM. */
int report_add_plan(struct json_object *o, const Plan *p, bool dry_run);

/* report_document_new() plus report_add_plan(); NULL on OOM. */
struct json_object *report_plan_document(const char *command, const Plan *p, bool dry_run);

/* {"file", "line", "column"} of a configuration position; NULL when it has no file. */
struct json_object *report_mark_json(const Mark *m);
/* Findings (diagnose/finding.h) as an array of {kind, severity, device, knob,
 * source, summary, values: {name: number}}: status.json and `iotunectl diagnose --json`. */
struct json_object *report_findings_json(const FindingList *l);
/* The same, only the findings of severity `min` and above. */
struct json_object *report_findings_json_from(const FindingList *l, FindingSeverity min);
