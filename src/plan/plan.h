/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "config.h"
#include "device.h"
#include "knob.h"

/* The states of DESIGN.md. `changed` in a dry run means "would change". */
typedef enum SettingState {
        STATE_OK,
        STATE_CHANGED,
        STATE_DRIFTED,
        STATE_FAILED,
        STATE_MANAGED,
        STATE_UNSUPPORTED,
        STATE_PENDING_REBOOT,
        _STATE_MAX,
} SettingState;

const char *setting_state_to_string(SettingState s);

/* What the daemon keeps per setting between drift checks. The CLI leaves it zero. */
typedef struct SettingRuntime {
        unsigned drifts;             /* corrections since this setting was planned */
        uint64_t last_change_usec;   /* CLOCK_REALTIME of the last write, 0 = never */
        uint64_t window_start_usec;  /* CLOCK_MONOTONIC start of the current counting window */
        unsigned window_drifts;      /* drifts within that window */
        uint64_t hold_until_usec;    /* CLOCK_MONOTONIC: back-off, do not write before this */
        unsigned backoff_level;      /* within one conflict episode, each new hold doubles */
        bool conflict;               /* in a conflict episode (reported once) */
        SettingState last_reported;  /* to log failures once, not every tick */
} SettingRuntime;

/* One knob on one object. */
typedef struct Setting {
        const Knob *knob;
        char *desired;      /* canonical config value: "max", "-1", "none" */
        Mark origin;        /* where `desired` was written */
        char *effective;    /* in the kernel's terms (clamped, rounded); set by reconcile */
        char *observed;     /* normalized read-back; set by reconcile */
        char *previous;     /* what was read before a write (APPLY), NULL if nothing written */
        SettingState state;
        char *note;         /* why: clamping, errors, unsupported reasons */
        int error;          /* -errno of the last failure, 0 otherwise */
        bool hold;          /* APPLY must not write it (daemon back-off); reported as drifted */
        SettingRuntime rt;
} Setting;

typedef struct DevicePlan {
        Device *device;
        char *profile;      /* NULL when excluded; the pinned name when IOTUNED_PROFILE names none */
        char *rule;         /* rule name, "IOTUNED_PROFILE" or "default_profile" */
        char *reason;       /* why that rule matched */
        bool excluded;
        char *error;        /* device-level problem (e.g. IOTUNED_PROFILE names no profile) */
        Setting *settings;  /* in knob-table (= write) order */
        size_t n_settings;
} DevicePlan;

DevicePlan *device_plan_free(DevicePlan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(DevicePlan *, device_plan_free);

typedef struct Plan {
        DevicePlan **devices;
        size_t n;
} Plan;

void plan_done(Plan *p);

/* Does `rule` match `d`? *ret_why says which condition decided it. */
bool rule_matches(const Rule *rule, const Device *d, char **ret_why);

/* Plan one device; takes ownership of `d` (also on failure). */
int plan_device(const Config *c, Device *d, DevicePlan **ret);

/* Plan all devices of `l`; moves them out of `l`. */
int plan_build(const Config *c, DeviceList *l, Plan *ret);

/* A plan whose desired values are given per knob (NULL = leave), e.g. recorded
 * originals for restore. Takes ownership of `d`. */
int plan_device_from_values(Device *d, const char *label, char *const values[_KNOB_MAX], DevicePlan **ret);

/* Summary counts over a plan: settings per state, devices tuned, ... */
void plan_count_states(const Plan *p, unsigned counts[_STATE_MAX]);
