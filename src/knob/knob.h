/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

struct NvmeQueueMap;

/* Every tunable is one row in the knob table (knob.c). The table order is the write
 * order: the NVMe queue-map rows come first, because the controller rebind they
 * may lead to resets every queue attribute; then the scheduler, because switching
 * it resets nr_requests (block/elevator.c: elevator_switch -> blk_mq_init_sched
 * sets q->nr_requests); read_ahead_kb after every row whose write is a queue-limits
 * update, because since Linux 6.11 such an update recomputes the read-ahead
 * (block/blk-settings.c: queue_limits_commit_update -> blk_apply_bdi_limits). */
typedef enum KnobId {
        KNOB_NVME_POLL_QUEUES,  /* module-wide nvme.poll_queues, as seen on one controller */
        KNOB_NVME_WRITE_QUEUES, /* module-wide nvme.write_queues */
        KNOB_NVME_IO_QUEUE_DEPTH, /* module-wide nvme.io_queue_depth: entries per I/O queue, hence the tag depth */
        KNOB_SCHEDULER,
        KNOB_NR_REQUESTS,
        KNOB_RQ_AFFINITY,
        KNOB_WBT_LAT_USEC,
        KNOB_NOMERGES,
        KNOB_ADD_RANDOM,
        KNOB_IOSTATS,
        KNOB_MAX_SECTORS_KB,
        /* After the rows whose writes are queue-limits updates: since 6.11 each one
         * recomputes the read-ahead (knob_resets()). */
        KNOB_READ_AHEAD_KB,
        KNOB_IO_TIMEOUT,
        KNOB_NVME_APST,         /* per controller: power/pm_qos_latency_tolerance_us or FID 0x0C */
        KNOB_NVME_COALESCING,   /* per controller: FID 0x08 */
        KNOB_PCIE_ASPM,         /* per PCIe link: <PCI function>/link/l1_aspm and its siblings */
        KNOB_IRQ_AFFINITY,   /* per interrupt vector: /proc/irq/N/smp_affinity_list */
        _KNOB_MAX,
        _KNOB_INVALID = -1,
} KnobId;

/* A set of knobs, as a bit per KnobId. */
#define KNOB_MASK(id) (1u << (id))

/* What the resolver may know about the queue it resolves a value for. */
typedef struct KnobFacts {
        bool rotational;
        unsigned nr_tags;             /* hardware tag depth (mq/0/nr_tags), 0 if unknown */
        unsigned max_hw_sectors_kb;   /* 0 if unknown */
        const char *scheduler_after;  /* the scheduler the queue has once the scheduler knob ran */
        unsigned possible_cpus;       /* 0 if unknown */
        unsigned max_queue_entries;   /* the NVMe controller's CAP.MQES + 1, 0 if unknown */
        /* The tag depth the queue will have once a planned module row takes effect
         * (nvme.io_queue_depth after a reboot or rebind), 0 if none is pending. */
        unsigned nr_tags_pending;
} KnobFacts;

/* What a row is set on, which decides how it is read and written. */
typedef enum KnobScope {
        KNOB_SCOPE_QUEUE,   /* a sysfs attribute below the disk */
        KNOB_SCOPE_IRQ,     /* /proc/irq/N/<attr> of one vector */
        KNOB_SCOPE_CTRL,    /* the disk's NVMe controller: sysfs or Get/Set Features */
        KNOB_SCOPE_MODULE,  /* an nvme module parameter: fixed when a controller is probed */
        KNOB_SCOPE_LINK,    /* the PCIe link above the disk's PCI function: <function>/link/ */
} KnobScope;

typedef struct Knob {
        KnobId id;
        KnobScope scope;
        const char *name;      /* config key, KNOB= journal field, JSON "knob" */
        const char *section;   /* profile section: "queue", "irq", "nvme", "pcie" */
        const char *attr;      /* queue: below the disk's sysfs directory; irq: below /proc/irq/N;
                                * ctrl: below the controller's; module: the parameter's name */
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

        /* What the row does to others, and what the kernel's answers mean for it. Read by
         * reconcile.c for every row alike; zero/NULL: nothing special. */
        /* Later rows are resolved against this row's value (KnobFacts.scheduler_after):
         * the value it will have once written, or, where it is not planned, the one the
         * queue has now. */
        bool resolve_basis;
        unsigned resets;               /* KNOB_MASK()s of the rows the kernel resets when this one changes */
        /* Its write is a queue-limits update (block/blk-sysfs.c since 6.11:
         * queue_limits_start_update ... queue_limits_commit_update), which resets the
         * read-ahead on those kernels: see knob_resets(). */
        bool limits_update;
        int unsupported_errno;         /* a read failing with this errno: the queue lacks the feature, */
        const char *unsupported_why;   /* as this says */
        /* A write the kernel refused with -error: what that means, in words; NULL (or a
         * NULL return): the generic "writing '...' failed". */
        char *(*refusal)(const char *value, int error);
        const char *limit_name;        /* what resolve() lacks when it cannot resolve (-ENODATA);
                                        * NULL: "hardware limit" */
        /* Every blk-mq queue has the attribute: on a disk with mq/, "unsupported" (it
         * could not be read) means the queue is going away. */
        bool on_every_mq_queue;
        /* Module rows: what the parameter counts on a controller, after a number ("poll
         * queue(s)", "entries per I/O queue"), and how much of it the controller's queue
         * maps show (the value the controller was probed with, as far as it shows). */
        const char *unit;
        unsigned (*from_queue_map)(const struct NvmeQueueMap *m);
        /* Module rows: the controller's tag depth (mq/N/nr_tags) follows the value: it
         * is the value - 1 once the driver probes the controller again. */
        bool sets_tag_depth;
} Knob;

extern const Knob knob_table[_KNOB_MAX];

const Knob *knob_by_name(const char *name);
const Knob *knob_get(KnobId id);
/* The ASPM states of a PCIe link, as drivers/pci/pcie/aspm.c (5.5+) names its files
 * below <PCI function>/link/: bit i is aspm_link_files[i]. The files exist only for
 * the states the link supports (aspm_ctrl_attrs_are_visible). */
#define ASPM_N_STATES 6
#define ASPM_L1_MASK 0x02u      /* l1_aspm */
#define ASPM_L1SS_MASK 0x3cu    /* l1_1_aspm, l1_2_aspm, l1_1_pcipm, l1_2_pcipm: each needs L1 */
extern const char *const aspm_state_names[ASPM_N_STATES];  /* "l0s", "l1", ... in config values */
extern const char *const aspm_link_files[ASPM_N_STATES];   /* "l0s_aspm", "l1_aspm", ... */

/* "off" or "l0s,l1" <-> a mask of states. */
int aspm_states_from_string(const char *s, unsigned *ret);
int aspm_states_to_string(unsigned mask, char **ret);

/* The current value of queue row `k` (section "queue") of the disk at
 * `disk_syspath`: its attribute read and normalized. -errno when it cannot be
 * read (no such attribute on this queue) or normalized. */
int knob_read_queue(const Knob *k, const char *disk_syspath, char **ret);

/* The rows the running kernel resets when row `k` changes: its `resets`, and on
 * Linux 6.11 and later read_ahead_kb for a row with `limits_update` set
 * (blk_apply_bdi_limits() raises bdi->ra_pages to at least 2 * io_opt and 128 KiB
 * at every queue-limits commit; 6.1 writes these attributes without touching it). */
unsigned knob_resets(const Knob *k);
/* Does row `k`, holding `value`, come through a reset by row `by` unchanged? A
 * queue-limits update raises read_ahead_kb to 128 KiB, never lowers it. */
bool knob_reset_keeps(const Knob *by, const Knob *k, const char *value);
/* The kernel release knob_resets() goes by: NULL (the default) reads uname(2);
 * tests pass a release such as "6.1.0-57-amd64" or "6.12.118+deb12-amd64". */
void knob_set_kernel_release(const char *release);

/* The row with resolve_basis set, or NULL. */
const Knob *knob_resolve_basis(void);
