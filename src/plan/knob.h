/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Every tunable is one row in the knob table (knob.c). The table order is the write
 * order: the scheduler comes first because switching it resets nr_requests
 * (block/elevator.c: elevator_switch -> blk_mq_init_sched sets q->nr_requests). */
typedef enum KnobId {
        KNOB_SCHEDULER,
        KNOB_NR_REQUESTS,
        KNOB_RQ_AFFINITY,
        KNOB_WBT_LAT_USEC,
        KNOB_NOMERGES,
        KNOB_READ_AHEAD_KB,
        KNOB_ADD_RANDOM,
        KNOB_IOSTATS,
        KNOB_MAX_SECTORS_KB,
        KNOB_IRQ_AFFINITY,   /* per interrupt vector: /proc/irq/N/smp_affinity_list */
        _KNOB_MAX,
        _KNOB_INVALID = -1,
} KnobId;

/* What the resolver may know about the queue it resolves a value for. */
typedef struct KnobFacts {
        bool rotational;
        unsigned nr_tags;             /* hardware tag depth (mq/0/nr_tags), 0 if unknown */
        unsigned max_hw_sectors_kb;   /* 0 if unknown */
        const char *scheduler_after;  /* the scheduler the queue has once the scheduler knob ran */
} KnobFacts;

typedef struct Knob {
        KnobId id;
        const char *name;      /* config key, KNOB= journal field, JSON "knob" */
        const char *section;   /* profile section: "queue" */
        const char *attr;      /* path below the disk's sysfs directory */
        bool needs_mq;         /* meaningless on bio-based disks (multipath heads, dm) */
        const char *expected;  /* what a valid config value looks like, for errors */
        const char *summary;   /* one line for plan/explain and the man page */

        /* Config value -> canonical form ("max", "256", "none", "-1"). 0, -EINVAL or -ERANGE. */
        int (*parse)(const char *value, char **ret);
        /* Kernel read-back -> the form compared against ("[none] mq-deadline" -> "none"). */
        int (*normalize)(const char *raw, char **ret);
        /* Canonical desired value -> the value the kernel will read back once written
         * (it clamps and rounds), plus an optional note saying why they differ. */
        int (*resolve)(const char *canonical, const KnobFacts *f, char **ret, char **ret_note);
} Knob;

extern const Knob knob_table[_KNOB_MAX];

const Knob *knob_by_name(const char *name);
const Knob *knob_get(KnobId id);
