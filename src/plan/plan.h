/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "blockstat.h"
#include "config.h"
#include "device.h"
#include "fileio.h"
#include "finding.h"
#include "irq.h"
#include "knob.h"
#include "topology.h"

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
        bool managed;                /* an affinity write was refused: kernel-managed, never retried */
        bool writer_sought;          /* the other writer was looked for (Setting.writer: found) */
} SettingRuntime;

/* One knob on one object: the disk's queue, or one of its interrupt vectors. */
typedef struct Setting {
        const Knob *knob;
        char *object;       /* NULL: the disk itself; "irq 26 (nvme0q1)" for a vector, "nvme0 apst"
                             * for a controller row */
        char *path;         /* attribute file; NULL: <disk syspath>/<knob->attr> */
        int irq;            /* the vector, -1 for queue knobs */
        bool managed_predicted; /* the driver manages this vector's affinity (irq_classify) */
        char *detail;       /* e.g. the vector's effective_affinity_list */
        char *desired;      /* canonical config value: "max", "-1", "none" */
        Mark origin;        /* where `desired` was written */
        char *effective;    /* in the kernel's terms (clamped, rounded); set by reconcile */
        char *observed;     /* normalized read-back; set by reconcile */
        char *previous;     /* what was read before a write (APPLY), NULL if nothing written */
        SettingState state;
        char *note;         /* why: clamping, errors, unsupported reasons */
        int error;          /* -errno of the last failure, 0 otherwise */
        bool hold;          /* APPLY must not write it (daemon back-off); reported as drifted */
        const Knob *reset_by; /* APPLY wrote it again because writing this row, before it, reset
                               * it (the scheduler switch resets nr_requests): a consequence of
                               * iotuned's own write, not somebody's change */
        char *writer;       /* the daemon: who else was found writing it, "udev rule
                             * /etc/udev/rules.d/60-io.rules:3", once it is in conflict */
        KeptAttr kept;      /* a file row's attribute, open between reads (read_attr_kept()) */
        SettingRuntime rt;
} Setting;

typedef struct DevicePlan {
        Device *device;
        char *profile;      /* NULL when excluded; the pinned name when IOTUNED_PROFILE names none */
        char *rule;         /* rule name, "IOTUNED_PROFILE" or "default_profile" */
        char *reason;       /* why that rule matched */
        bool excluded;
        char *error;        /* device-level problem (e.g. IOTUNED_PROFILE names no profile) */
        Setting *settings;  /* queue knobs in knob-table (= write) order, then IRQ vectors */
        size_t n_settings;
        IrqPlacement irq_placement;   /* LEAVE/UNSET: no vectors planned */
        bool keep_irqbalance_away;
        char *irq_note;     /* why no vectors were planned, when there is a reason to say */
        bool nvme_rebind;   /* the profile allows `apply: rebind` for new queue counts */
        bool rebound;       /* APPLY unbound the controller: this plan's device is stale */
        char *rebind_key;   /* nvme_rebind_key() of that rebind */
        char *nvme_note;    /* why no controller rows were planned, when there is a reason to say */
        /* The daemon's view of the disk's load, from its stat file at each drift check:
         * the last sample, the load between the last two, and what that load shows
         * (diagnose/signals.h). Empty in the CLI. */
        BlockStat last_stat;
        bool has_stat;
        BlockLoad load;
        bool has_load;
        FindingList findings;
        uint64_t warning_seen_usec;  /* CLOCK_MONOTONIC: the last sample with a warning finding */
        /* The daemon: its queue knobs were written at the kernel's "add" event at this
         * CLOCK_MONOTONIC time, and udev's event for it has not been handled yet (0:
         * not so). See src/daemon/kernel-event.c. */
        uint64_t early_usec;
        /* A row of module scope (nvme.poll_queues and the like) was planned; it
         * may stay true after such a row was dropped, never false while one is
         * there: plan_module_targets() skips the plans without, so that a burst
         * of disks does not scan every kept plan's rows for each new disk. */
        bool has_module_rows;
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

/* What planning IRQ placement needs from the machine. NULL: plan queue knobs only. */
typedef struct PlanContext {
        const Topology *topology;
        const IrqTable *irqs;     /* /proc/interrupts */
        const char *proc_root;    /* "" or a test root: <proc_root>/proc/irq/N/... */
} PlanContext;

/* Plan one device; takes ownership of `d` (also on failure). */
int plan_device(const Config *c, Device *d, const PlanContext *ctx, DevicePlan **ret);

/* Plan all devices of `l`; moves them out of `l`. A vector shared by several disks
 * of one PCI function (NVMe namespaces, AHCI ports) is planned once, with the
 * first of them. */
int plan_build(const Config *c, DeviceList *l, const PlanContext *ctx, Plan *ret);

/* Drop from `p` the vectors and NVMe controller rows that one of `others` already
 * plans (namespaces of one controller share both). */
void plan_drop_claimed_irqs(DevicePlan *p, DevicePlan *const *others, size_t n_others);

/* A plan whose desired values are given per knob (NULL = leave) and per vector
 * ("IRQ=cpulist" strings), e.g. recorded originals for restore. Takes ownership of `d`. */
int plan_device_from_values(Device *d, const char *label, char *const values[_KNOB_MAX], char *const *irq_values,
                            const char *proc_root, DevicePlan **ret);

/* "/proc/irq/N/<attr>" under proc_root. */
char *irq_attr_path(const char *proc_root, unsigned irq, const char *attr);

/* The value every controller's module-wide row converges on: the largest any
 * plan wants (nvme.poll_queues and nvme.write_queues are global to the driver).
 * -1 where no plan has the row. */
void plan_module_targets(DevicePlan *const *plans, size_t n, int targets[_KNOB_MAX]);

/* For messages: the knob name, or "irq 26 (nvme0q1)" for a vector. */
static inline const char *setting_label(const Setting *s) {
        return s->object ?: s->knob->name;
}

/* Summary counts over a plan: settings per state, devices tuned, ... */
void plan_count_states(const Plan *p, unsigned counts[_STATE_MAX]);
