/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

/* The daemon's state file (/run/iotuned/status.json, written from plan-json.h), read
 * as untrusted input:
 * every member `iotunectl status` uses is type-checked here, once, so the
 * printing code never touches json-c. Strings point into `root`. */

struct json_object;

typedef struct StatusSetting {
        const char *knob, *object, *effective, *observed, *note;
        const char *writer;     /* who else writes it, once in conflict; NULL: not known */
        bool conflict;
        SettingState state;
        unsigned drifts;
} StatusSetting;

typedef struct StatusNvme {
        const char *controller, *address, *transport, *model, *firmware;
        bool has_maps;
        unsigned maps_default, maps_read, maps_poll;
        int apst_supported;     /* -1 unknown */
} StatusNvme;

/* facts.multipath_path: a hidden NVMe multipath path disk (nvmeXcYnZ). */
typedef struct StatusPath {
        const char *head, *controller, *state, *ana_state;
} StatusPath;

/* A finding of the daemon's load samples (diagnose/finding.h). */
typedef struct StatusFinding {
        const char *kind, *severity, *knob, *summary;
} StatusFinding;

typedef struct StatusDevice {
        const char *device, *profile, *rule, *error;
        bool excluded;
        StatusNvme *nvme;       /* NULL when not an NVMe disk */
        StatusPath *path;       /* NULL when not a multipath path */
        StatusSetting *settings;
        size_t n_settings;
        StatusFinding *findings;
        size_t n_findings;
} StatusDevice;

typedef struct Status {
        struct json_object *root;
        int pid;
        bool has_drifts_corrected;
        unsigned drifts_corrected, conflicts;
        const char *irqbalance_state;
        StatusDevice *devices;
        size_t n_devices;
} Status;

/* The largest status file read: a few KiB per disk. */
#define STATUS_FILE_MAX (16u << 20)

void status_done(Status *s);

/* Parse a status document. On a malformed one returns -EBADMSG and, in
 * *ret_error, what is wrong and where: "devices[3].settings[0].state: expected a
 * string". -ENOMEM on OOM. */
int status_parse(const char *text, Status *ret, char **ret_error);
