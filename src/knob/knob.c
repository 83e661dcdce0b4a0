/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "cpuset.h"
#include "fileio.h"
#include "knob.h"
#include "nvme-feature.h"
#include "util.h"

/* Bounds from the kernel:
 *   BLKDEV_MIN_RQ = 4 (include/linux/blkdev.h): nr_requests below it is raised to it.
 *   MAX_SCHED_RQ = 16 * BLKDEV_DEFAULT_RQ = 2048 (block/blk-mq-tag.c): with a scheduler,
 *     nr_requests above it is EINVAL.
 *   BLK_MQ_MAX_DEPTH = 10240 (include/linux/blk-mq.h): no tag set is deeper.
 *   ELV_NAME_MAX = 16 (include/linux/elevator.h), including the NUL. */
#define BLKDEV_MIN_RQ 4u
#define MAX_SCHED_RQ 2048u
#define BLK_MQ_MAX_DEPTH 10240u
#define ELV_NAME_MAX 16u
#define WBT_DEFAULT_NONROT_USEC 2000u   /* block/blk-wbt.c: wbt_default_latency_nsec */
#define WBT_DEFAULT_ROT_USEC 75000u
#define READ_AHEAD_MAX_KB (1u << 20)     /* 1 GiB: far beyond any useful read-ahead */
#define VM_READAHEAD_KB 128u             /* include/linux/mm.h: VM_READAHEAD_PAGES, in KiB */

static int dup_ret(const char *s, char **ret) {
        char *c = strdup(s);

        assert(s);
        assert(ret);

        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int uint_ret(uint64_t v, char **ret) {
        assert(ret);

        return asprintf_safe(ret, "%" PRIu64, v);
}

static int parse_uint_range(const char *value, uint64_t lo, uint64_t hi, char **ret) {
        uint64_t v;
        int r = safe_atou64(value, &v);

        assert(value);
        assert(ret);

        if (r < 0)
                return r;
        if (v < lo || v > hi)
                return -ERANGE;
        return uint_ret(v, ret);
}

static int normalize_trim(const char *raw, char **ret) {
        _cleanup_free_ char *c = strdup(raw);

        assert(raw);
        assert(ret);

        if (!c)
                return -ENOMEM;
        strstrip(c);
        *ret = TAKE_PTR(c);
        return 0;
}

static int resolve_same(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        assert(canonical);
        assert(f);
        assert(ret);

        return dup_ret(canonical, ret);
}

/* scheduler ---------------------------------------------------------------------- */

static int parse_scheduler(const char *value, char **ret) {
        size_t n = strlen(value);

        assert(value);
        assert(ret);

        if (n == 0 || n >= ELV_NAME_MAX)
                return -EINVAL;
        for (const char *p = value; *p; p++)
                if (!(islower((unsigned char) *p) || isdigit((unsigned char) *p) || *p == '-' || *p == '_'))
                        return -EINVAL;
        return dup_ret(value, ret);
}

/* "[none] mq-deadline kyber" -> "none". A bio-based disk prints just "none"
 * without brackets (block/elevator.c: elv_iosched_show). */
static int normalize_scheduler(const char *raw, char **ret) {
        const char *a = strchr(raw, '['), *b;

        assert(raw);
        assert(ret);

        if (!a) {
                _cleanup_free_ char *c = strdup(raw);
                if (!c)
                        return -ENOMEM;
                strstrip(c);
                if (strchr(c, ' '))
                        return -EINVAL; /* a list without a selection is not a value */
                *ret = TAKE_PTR(c);
                return 0;
        }
        b = strchr(a, ']');
        if (!b)
                return -EINVAL;
        *ret = strndup(a + 1, b - a - 1);
        return *ret ? 0 : -ENOMEM;
}

/* The kernel's EINVAL on the scheduler file means "no such elevator": it first
 * tried request_module("<name>-iosched") (block/elevator.c: elevator_change). */
static char *refusal_scheduler(const char *value, int error) {
        char *why = NULL;

        assert(value);

        if (error != -EINVAL)
                return NULL;
        (void) asprintf_safe(&why, "kernel has no scheduler '%s' (not built in, no %s-iosched module)", value, value);
        return why;
}

/* nr_requests -------------------------------------------------------------------- */

static int parse_nr_requests(const char *value, char **ret) {
        assert(value);
        assert(ret);

        if (streq(value, "max"))
                return dup_ret("max", ret);
        return parse_uint_range(value, 1, BLK_MQ_MAX_DEPTH, ret);
}

static int resolve_nr_requests(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        bool sched = f->scheduler_after && !streq(f->scheduler_after, "none");
        uint64_t v, limit;

        assert(canonical);
        assert(f);
        assert(ret);

        if (streq(canonical, "max")) {
                if (f->nr_tags == 0)
                        return -ENODATA; /* no tag depth known: cannot resolve "max" */
                v = f->nr_tags;
        } else {
                int r = safe_atou64(canonical, &v);
                if (r < 0)
                        return r;
        }
        /* block/blk-sysfs.c queue_requests_store */
        if (v < BLKDEV_MIN_RQ) {
                if (ret_note)
                        (void) asprintf_safe(ret_note, "raised to the kernel minimum %u", BLKDEV_MIN_RQ);
                v = BLKDEV_MIN_RQ;
        }
        /* block/blk-mq-tag.c blk_mq_tag_update_depth: without a scheduler the tag set cannot
         * grow (EINVAL); with one the limit is MAX_SCHED_RQ. */
        limit = sched ? MAX_SCHED_RQ : (f->nr_tags ? f->nr_tags : BLK_MQ_MAX_DEPTH);
        if (v > limit) {
                if (ret_note && !sched && f->nr_tags_pending > limit)
                        /* The tag set is sized when the driver probes the controller
                         * (drivers/nvme/host/pci.c: nvme_dev_add): a larger one waits for it. */
                        (void) asprintf_safe(ret_note,
                                             "clamped to %" PRIu64 " (hardware tag depth; %" PRIu64
                                             " once the pending nvme.io_queue_depth takes effect)",
                                             limit, MIN(v, (uint64_t) f->nr_tags_pending));
                else if (ret_note)
                        (void) asprintf_safe(ret_note, "clamped to %" PRIu64 " (%s)", limit,
                                             sched ? "scheduler queue limit" : "hardware tag depth");
                v = limit;
        }
        return uint_ret(v, ret);
}

/* small enums -------------------------------------------------------------------- */

static int parse_0_to_2(const char *value, char **ret) {
        assert(value);
        assert(ret);

        return parse_uint_range(value, 0, 2, ret);
}

static int parse_bool01(const char *value, char **ret) {
        int b = parse_boolean(value);

        assert(value);
        assert(ret);

        if (b < 0)
                return -EINVAL;
        return dup_ret(b ? "1" : "0", ret);
}

/* wbt_lat_usec ------------------------------------------------------------------- */

static int parse_wbt(const char *value, char **ret) {
        int64_t v;
        int r;

        assert(value);
        assert(ret);

        if (streq(value, "default"))
                return dup_ret("-1", ret);
        if (streq(value, "off"))
                return dup_ret("0", ret);
        r = safe_atoi64(value, &v);
        if (r < 0)
                return r;
        if (v < -1 || v > 10 * 1000 * 1000) /* 10 s is already absurd for a latency target */
                return -ERANGE;
        return asprintf_safe(ret, "%" PRId64, v);
}

static int resolve_wbt(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        assert(canonical);
        assert(f);
        assert(ret);

        /* block/blk-sysfs.c queue_wb_lat_store: -1 restores wbt_default_latency_nsec(),
         * which depends on rotational; reads come back in usec. */
        if (streq(canonical, "-1")) {
                if (ret_note)
                        (void) asprintf_safe(ret_note, "kernel default for a %s disk",
                                             f->rotational ? "rotational" : "non-rotational");
                return uint_ret(f->rotational ? WBT_DEFAULT_ROT_USEC : WBT_DEFAULT_NONROT_USEC, ret);
        }
        return dup_ret(canonical, ret);
}

/* read_ahead_kb ------------------------------------------------------------------ */

static int parse_read_ahead(const char *value, char **ret) {
        assert(value);
        assert(ret);

        return parse_uint_range(value, 0, READ_AHEAD_MAX_KB, ret);
}

static int resolve_read_ahead(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        assert(canonical);
        assert(f);
        assert(ret);

        /* block/blk-sysfs.c queue_ra_store keeps whole pages: ra_pages = kb >> (PAGE_SHIFT - 10). */
        uint64_t v, page_kb = (uint64_t) sysconf(_SC_PAGESIZE) / 1024, rounded;
        int r = safe_atou64(canonical, &v);
        if (r < 0)
                return r;
        rounded = v - v % page_kb;
        if (rounded != v && ret_note)
                (void) asprintf_safe(ret_note, "rounded down to whole %" PRIu64 " KiB pages", page_kb);
        return uint_ret(rounded, ret);
}

/* max_sectors_kb ----------------------------------------------------------------- */

static int parse_max_sectors(const char *value, char **ret) {
        assert(value);
        assert(ret);

        if (streq(value, "max"))
                return dup_ret("max", ret);
        return parse_uint_range(value, 4, UINT32_MAX, ret);
}

static int resolve_max_sectors(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        uint64_t v;
        int r;

        assert(canonical);
        assert(f);
        assert(ret);

        if (streq(canonical, "max")) {
                if (f->max_hw_sectors_kb == 0)
                        return -ENODATA;
                return uint_ret(f->max_hw_sectors_kb, ret);
        }
        r = safe_atou64(canonical, &v);
        if (r < 0)
                return r;
        /* 6.1 rejects values above max_hw_sectors_kb with EINVAL, 6.12 clamps them
         * (block/blk-sysfs.c queue_max_sectors_store): plan the clamped value on both. */
        if (f->max_hw_sectors_kb && v > f->max_hw_sectors_kb) {
                if (ret_note)
                        (void) asprintf_safe(ret_note, "clamped to max_hw_sectors_kb %u", f->max_hw_sectors_kb);
                v = f->max_hw_sectors_kb;
        }
        return uint_ret(v, ret);
}

/* irq_affinity ------------------------------------------------------------------- */

/* Canonical cpulist both ways: the kernel prints "0-3", we may be given "0,1,2,3". */
static int cpulist_canonical(const char *value, char **ret) {
        CpuSet s = {};
        int r = cpuset_parse(value, &s);

        assert(value);
        assert(ret);

        if (r < 0)
                return r;
        if (cpuset_count(&s) == 0) {
                cpuset_done(&s);
                return -EINVAL; /* kernel/irq/proc.c: an empty mask is EINVAL */
        }
        r = cpuset_format(&s, ret);
        cpuset_done(&s);
        return r;
}

/* io_timeout --------------------------------------------------------------------- */

/* block/blk-sysfs.c queue_io_timeout_store: msecs_to_jiffies() on write, jiffies_to_msecs()
 * on read, so only whole jiffies come back. 20 ms is a whole number of jiffies at every
 * HZ the kernel offers (100, 250, 300, 1000): such values read back as written. */
#define IO_TIMEOUT_STEP_MS 20u
#define IO_TIMEOUT_MAX_MS (3600u * 1000u)

static int parse_io_timeout(const char *value, char **ret) {
        uint64_t v;
        int r = safe_atou64(value, &v);

        assert(value);
        assert(ret);

        if (r < 0)
                return r;
        if (v < IO_TIMEOUT_STEP_MS || v > IO_TIMEOUT_MAX_MS || v % IO_TIMEOUT_STEP_MS)
                return -ERANGE;
        return uint_ret(v, ret);
}

/* apst ---------------------------------------------------------------------------- */

/* "off" (no autonomous transitions), "auto" (no latency limit of ours: the kernel's
 * choice), or the largest exit latency in microseconds the controller may add,
 * as power/pm_qos_latency_tolerance_us takes it (drivers/base/power/sysfs.c: a
 * non-negative s32; nvme_set_latency_tolerance turns 0 into APST off). */
static int parse_apst(const char *value, char **ret) {
        int64_t v;
        int r;

        assert(value);
        assert(ret);

        if (streq(value, "off") || streq(value, "auto"))
                return dup_ret(value, ret);
        r = safe_atoi64(value, &v);
        if (r < 0)
                return r;
        if (v < 0 || v > INT32_MAX)
                return -ERANGE;
        return v == 0 ? dup_ret("off", ret) : uint_ret((uint64_t) v, ret);
}

/* pm_qos_latency_tolerance_us prints "auto", "any" or a number; a Get Features
 * read is passed in as "apste=0|1". "any" and "auto" mean the same to nvme. */
static int normalize_apst(const char *raw, char **ret) {
        _cleanup_free_ char *c = strdup(raw);

        assert(raw);
        assert(ret);

        if (!c)
                return -ENOMEM;
        strstrip(c);
        if (streq(c, "any") || streq(c, "apste=1"))
                return dup_ret("auto", ret);
        if (streq(c, "apste=0"))
                return dup_ret("off", ret);
        return parse_apst(c, ret);
}

/* coalescing ---------------------------------------------------------------------- */

static int parse_coalescing(const char *value, char **ret) {
        NvmeCoalescing c;
        int r = nvme_coalescing_parse(value, &c);

        assert(value);
        assert(ret);

        if (r < 0)
                return r;
        return nvme_coalescing_format(&c, ret);
}

/* Read as the raw completion dword 0 of Get Features 0x08, "0x%08x". */
static int normalize_coalescing(const char *raw, char **ret) {
        NvmeCoalescing c;
        uint64_t v;
        char *end;

        assert(raw);
        assert(ret);

        errno = 0;
        v = strtoull(raw, &end, 0);
        if (errno || end == raw || v > UINT32_MAX)
                return -EINVAL;
        nvme_coalescing_from_dw((uint32_t) v, &c);
        return nvme_coalescing_format(&c, ret);
}

/* nvme queue counts --------------------------------------------------------------- */

/* drivers/nvme/host/pci.c io_queue_count_set: at most num_possible_cpus(). */
static int parse_queue_count(const char *value, char **ret) {
        assert(value);
        assert(ret);

        return parse_uint_range(value, 0, 8192, ret);
}

static int resolve_queue_count(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        uint64_t v;
        int r = safe_atou64(canonical, &v);

        assert(canonical);
        assert(f);
        assert(ret);

        if (r < 0)
                return r;
        if (f->possible_cpus && v > f->possible_cpus) {
                if (ret_note)
                        (void) asprintf_safe(ret_note, "clamped to the %u possible CPUs (the nvme driver's limit)",
                                             f->possible_cpus);
                v = f->possible_cpus;
        }
        return uint_ret(v, ret);
}

/* nvme.io_queue_depth --------------------------------------------------------------- */

/* drivers/nvme/host/pci.c io_queue_depth_set: param_set_uint_minmax(val, kp,
 * NVME_PCI_MIN_QUEUE_SIZE 2, NVME_PCI_MAX_QUEUE_SIZE 4095); anything else is EINVAL,
 * and a refused option makes the whole module fail to load. */
#define NVME_PCI_MIN_QUEUE_SIZE 2u
#define NVME_PCI_MAX_QUEUE_SIZE 4095u

static int parse_queue_depth(const char *value, char **ret) {
        assert(value);
        assert(ret);

        return parse_uint_range(value, NVME_PCI_MIN_QUEUE_SIZE, NVME_PCI_MAX_QUEUE_SIZE, ret);
}

/* drivers/nvme/host/pci.c nvme_pci_enable: q_depth = min(CAP.MQES + 1, io_queue_depth);
 * nvme_dev_add: the tag set's queue_depth = min(q_depth, BLK_MQ_MAX_DEPTH) - 1 (one
 * entry stays free so that a full queue is told from an empty one). A controller
 * allows no more than its MQES, whatever the parameter says. */
static int resolve_queue_depth(const char *canonical, const KnobFacts *f, char **ret, char **ret_note) {
        uint64_t v;
        int r = safe_atou64(canonical, &v);

        assert(canonical);
        assert(f);
        assert(ret);

        if (r < 0)
                return r;
        if (f->max_queue_entries && v > f->max_queue_entries) {
                if (ret_note)
                        (void) asprintf_safe(ret_note,
                                             "capped at the controller's %u entries per queue (CAP.MQES + 1): "
                                             "tag depth %u",
                                             f->max_queue_entries, f->max_queue_entries - 1);
                v = f->max_queue_entries;
        }
        return uint_ret(v, ret);
}

/* pcie aspm ----------------------------------------------------------------------- */

/* drivers/pci/pcie/aspm.c (6.1): ASPM_ATTR(l0s_aspm, L0S) ... ASPM_ATTR(l1_2_pcipm, L1_2_PCIPM).
 * Each file reads 1 when its state is enabled on the link (link->aspm_enabled) and
 * takes a boolean: 0 adds the state to the link's disable mask, 1 removes it;
 * enabling an L1 substate also enables L1 (aspm_attr_store_common). */
const char *const aspm_state_names[ASPM_N_STATES] = { "l0s", "l1", "l1_1", "l1_2", "l1_1_pcipm", "l1_2_pcipm" };
const char *const aspm_link_files[ASPM_N_STATES] = {
        "l0s_aspm", "l1_aspm", "l1_1_aspm", "l1_2_aspm", "l1_1_pcipm", "l1_2_pcipm",
};

int aspm_states_from_string(const char *s, unsigned *ret) {
        _cleanup_free_ char *c = NULL;
        unsigned mask = 0;
        char *tok, *save = NULL;

        assert(s);
        assert(ret);

        if (streq(s, "off")) {
                *ret = 0;
                return 0;
        }
        c = strdup(s);
        if (!c)
                return -ENOMEM;
        for (tok = strtok_r(c, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                size_t i;
                tok = strstrip(tok);
                for (i = 0; i < ASPM_N_STATES; i++)
                        if (streq(tok, aspm_state_names[i]))
                                break;
                if (i == ASPM_N_STATES || (mask & (1u << i)))
                        return -EINVAL; /* unknown, or named twice */
                mask |= 1u << i;
        }
        if (mask == 0)
                return -EINVAL; /* "", "," */
        /* The kernel turns L1 on with any of its substates: "l1_2" alone cannot be. */
        if ((mask & ASPM_L1SS_MASK) && !(mask & ASPM_L1_MASK))
                return -EINVAL;
        *ret = mask;
        return 0;
}

int aspm_states_to_string(unsigned mask, char **ret) {
        char buf[64] = "";

        assert(ret);

        if (mask == 0)
                return dup_ret("off", ret);
        for (size_t i = 0; i < ASPM_N_STATES; i++)
                if (mask & (1u << i)) {
                        if (buf[0])
                                strcat(buf, ",");
                        strcat(buf, aspm_state_names[i]);
                }
        return dup_ret(buf, ret);
}

/* A config value and a link's read-back (which reconcile builds from the files that
 * read 1) both come out as "off" or the states in table order, "l1,l1_1". */
static int parse_aspm(const char *value, char **ret) {
        unsigned mask;
        int r = aspm_states_from_string(value, &mask);

        assert(value);
        assert(ret);

        if (r < 0)
                return r;
        return aspm_states_to_string(mask, ret);
}

static int normalize_aspm(const char *raw, char **ret) {
        _cleanup_free_ char *c = strdup(raw);

        assert(raw);
        assert(ret);

        if (!c)
                return -ENOMEM;
        return parse_aspm(strstrip(c), ret);
}

const Knob knob_table[_KNOB_MAX] = {
        [KNOB_NVME_POLL_QUEUES] = {
                .id = KNOB_NVME_POLL_QUEUES, .scope = KNOB_SCOPE_MODULE, .name = "poll_queues", .section = "nvme",
                .attr = "poll_queues",
                .expected = "a number of polled I/O queues, 0 upwards",
                .summary = "polled queues (no interrupts) for HIPRI I/O; module-wide, fixed at controller probe",
                .parse = parse_queue_count, .normalize = normalize_trim, .resolve = resolve_queue_count,
                .unit = "poll queue(s)", .from_queue_map = nvme_queue_map_poll_queues,
        },
        [KNOB_NVME_WRITE_QUEUES] = {
                .id = KNOB_NVME_WRITE_QUEUES, .scope = KNOB_SCOPE_MODULE, .name = "write_queues", .section = "nvme",
                .attr = "write_queues",
                .expected = "a number of I/O queues for writes, 0 (reads and writes share) upwards",
                .summary = "queues reserved for writes, the rest serve reads; module-wide, fixed at controller probe",
                .parse = parse_queue_count, .normalize = normalize_trim, .resolve = resolve_queue_count,
                .unit = "write queue(s)", .from_queue_map = nvme_queue_map_write_queues,
        },
        [KNOB_NVME_IO_QUEUE_DEPTH] = {
                .id = KNOB_NVME_IO_QUEUE_DEPTH, .scope = KNOB_SCOPE_MODULE, .name = "io_queue_depth",
                .section = "nvme", .attr = "io_queue_depth",
                .expected = "entries per I/O queue from 2 to 4095 (the tag depth is one less)",
                .summary = "entries per I/O queue, and so the tag depth that caps nr_requests under none; "
                           "module-wide, fixed at controller probe",
                .parse = parse_queue_depth, .normalize = normalize_trim, .resolve = resolve_queue_depth,
                .unit = "entries per I/O queue", .from_queue_map = nvme_queue_map_io_queue_depth,
                .sets_tag_depth = true,
        },
        [KNOB_SCHEDULER] = {
                .id = KNOB_SCHEDULER, .name = "scheduler", .section = "queue", .attr = "queue/scheduler",
                .needs_mq = true,
                .expected = "an I/O scheduler name such as none, mq-deadline, bfq or kyber",
                .summary = "I/O scheduler; switching it resets nr_requests",
                .parse = parse_scheduler, .normalize = normalize_scheduler, .resolve = resolve_same,
                /* block/elevator.c: elevator_switch -> blk_mq_init_sched sets q->nr_requests;
                 * nr_requests limits depend on the scheduler (resolve_nr_requests). */
                .resolve_basis = true,
                .resets = KNOB_MASK(KNOB_NR_REQUESTS),
                .refusal = refusal_scheduler,
                .on_every_mq_queue = true,
        },
        [KNOB_NR_REQUESTS] = {
                .id = KNOB_NR_REQUESTS, .name = "nr_requests", .section = "queue", .attr = "queue/nr_requests",
                .needs_mq = true,
                .expected = "a queue depth from 1 to 10240, or max (the hardware tag depth)",
                .summary = "requests the block layer queues per hardware queue",
                .parse = parse_nr_requests, .normalize = normalize_trim, .resolve = resolve_nr_requests,
                .limit_name = "hardware tag depth",
                .on_every_mq_queue = true,
        },
        [KNOB_RQ_AFFINITY] = {
                .id = KNOB_RQ_AFFINITY, .name = "rq_affinity", .section = "queue", .attr = "queue/rq_affinity",
                .needs_mq = true,
                .expected = "0 (off), 1 (complete in the submitter's cache group) or 2 (on the submitting CPU)",
                .summary = "where completions run relative to the submitting CPU",
                .parse = parse_0_to_2, .normalize = normalize_trim, .resolve = resolve_same,
                .on_every_mq_queue = true,
        },
        [KNOB_WBT_LAT_USEC] = {
                .id = KNOB_WBT_LAT_USEC, .name = "wbt_lat_usec", .section = "queue", .attr = "queue/wbt_lat_usec",
                .needs_mq = true,
                .expected = "microseconds from 0 (off) to 10000000, or -1/default (kernel default)",
                .summary = "writeback throttling latency target",
                .parse = parse_wbt, .normalize = normalize_trim, .resolve = resolve_wbt,
                /* block/blk-sysfs.c queue_wb_lat_show: EINVAL when WBT was never set up on
                 * this queue (no CONFIG_BLK_WBT_MQ, or a bio-based queue). */
                .unsupported_errno = EINVAL,
                .unsupported_why = "writeback throttling is not available on this queue",
        },
        [KNOB_NOMERGES] = {
                .id = KNOB_NOMERGES, .name = "nomerges", .section = "queue", .attr = "queue/nomerges",
                .needs_mq = true,
                .expected = "0 (merge), 1 (no extended merges) or 2 (no merges)",
                .summary = "request merging",
                .parse = parse_0_to_2, .normalize = normalize_trim, .resolve = resolve_same,
                .on_every_mq_queue = true,
        },
        [KNOB_ADD_RANDOM] = {
                .id = KNOB_ADD_RANDOM, .name = "add_random", .section = "queue", .attr = "queue/add_random",
                .needs_mq = false,
                .expected = "a boolean (true/false)",
                .summary = "feed I/O timings to the entropy pool",
                .parse = parse_bool01, .normalize = normalize_trim, .resolve = resolve_same,
                .limits_update = true,
        },
        [KNOB_IOSTATS] = {
                .id = KNOB_IOSTATS, .name = "iostats", .section = "queue", .attr = "queue/iostats",
                .needs_mq = false,
                .expected = "a boolean (true/false)",
                .summary = "per-disk I/O accounting (/proc/diskstats)",
                .parse = parse_bool01, .normalize = normalize_trim, .resolve = resolve_same,
                .limits_update = true,
        },
        [KNOB_MAX_SECTORS_KB] = {
                .id = KNOB_MAX_SECTORS_KB, .name = "max_sectors_kb", .section = "queue", .attr = "queue/max_sectors_kb",
                .needs_mq = false,
                .expected = "KiB from 4 upwards, or max (max_hw_sectors_kb)",
                .summary = "largest request the block layer builds",
                .parse = parse_max_sectors, .normalize = normalize_trim, .resolve = resolve_max_sectors,
                .limits_update = true,
        },
        [KNOB_READ_AHEAD_KB] = {
                .id = KNOB_READ_AHEAD_KB, .name = "read_ahead_kb", .section = "queue", .attr = "queue/read_ahead_kb",
                .needs_mq = false,
                .expected = "KiB from 0 to 1048576",
                .summary = "page-cache read-ahead window",
                .parse = parse_read_ahead, .normalize = normalize_trim, .resolve = resolve_read_ahead,
                .on_every_mq_queue = true,
        },
        [KNOB_IO_TIMEOUT] = {
                .id = KNOB_IO_TIMEOUT, .name = "io_timeout", .section = "queue", .attr = "queue/io_timeout",
                .needs_mq = true,
                .expected = "milliseconds from 20 to 3600000, a multiple of 20 (the kernel keeps whole jiffies)",
                .summary = "how long a request may take before the driver aborts it",
                .parse = parse_io_timeout, .normalize = normalize_trim, .resolve = resolve_same,
        },
        [KNOB_NVME_APST] = {
                .id = KNOB_NVME_APST, .scope = KNOB_SCOPE_CTRL, .name = "apst", .section = "nvme",
                .attr = "power/pm_qos_latency_tolerance_us",
                .expected = "off, auto, or the largest power-state exit latency in microseconds",
                .summary = "autonomous power state transitions (FID 0x0C); off avoids wake-up stalls",
                .parse = parse_apst, .normalize = normalize_apst, .resolve = resolve_same,
        },
        [KNOB_NVME_COALESCING] = {
                .id = KNOB_NVME_COALESCING, .scope = KNOB_SCOPE_CTRL, .name = "coalescing", .section = "nvme",
                .attr = NULL,
                .expected = "off, or threshold=ENTRIES (1-256),time_us=MICROSECONDS (0-25500 in steps of 100)",
                .summary = "interrupt coalescing (FID 0x08): completions per interrupt and how long to wait",
                .parse = parse_coalescing, .normalize = normalize_coalescing, .resolve = resolve_same,
        },
        [KNOB_PCIE_ASPM] = {
                .id = KNOB_PCIE_ASPM, .scope = KNOB_SCOPE_LINK, .name = "aspm", .section = "pcie", .attr = "link",
                .expected = "off, or the ASPM states to leave enabled, from l0s, l1, l1_1, l1_2, l1_1_pcipm, "
                            "l1_2_pcipm, separated by commas (an L1 substate needs l1)",
                .summary = "ASPM states of the PCIe link above the disk's PCI function; off avoids L1 exit latency",
                .parse = parse_aspm, .normalize = normalize_aspm, .resolve = resolve_same,
        },
        [KNOB_IRQ_AFFINITY] = {
                .id = KNOB_IRQ_AFFINITY, .scope = KNOB_SCOPE_IRQ, .name = "irq_affinity", .section = "irq", .attr = "smp_affinity_list",
                .needs_mq = false,
                .expected = "a cpulist such as 0-3,8",
                .summary = "CPUs an interrupt vector may fire on (planned from the profile's irq: placement)",
                .parse = cpulist_canonical, .normalize = cpulist_canonical, .resolve = resolve_same,
        },
};

const Knob *knob_by_name(const char *name) {
        assert(name);

        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (streq(knob_table[i].name, name))
                        return &knob_table[i];
        return NULL;
}

const Knob *knob_get(KnobId id) {
        if (id < 0 || id >= _KNOB_MAX)
                return NULL;
        return &knob_table[id];
}

const Knob *knob_resolve_basis(void) {
        for (size_t i = 0; i < _KNOB_MAX; i++)
                if (knob_table[i].resolve_basis)
                        return &knob_table[i];
        return NULL;
}

int knob_read_queue(const Knob *k, const char *disk_syspath, char **ret) {
        _cleanup_free_ char *raw = NULL;
        int r;

        assert(k);
        assert(k->normalize);
        assert(streq(k->section, "queue"));
        assert(disk_syspath);
        assert(ret);

        r = read_attr_at(disk_syspath, k->attr, &raw);
        if (r < 0)
                return r;
        return k->normalize(raw, ret);
}

static const char *kernel_release_override;

void knob_set_kernel_release(const char *release) {
        kernel_release_override = release;
}

/* Is the running kernel (or the one a test names) at least major.minor? An
 * unreadable release counts as new: a row written once more is harmless, a reset
 * missed leaves a setting undone. */
static bool kernel_at_least(unsigned major, unsigned minor) {
        struct utsname u;
        const char *release = kernel_release_override;
        unsigned maj, min;

        if (!release) {
                if (uname(&u) < 0)
                        return true;
                release = u.release;
        }
        if (sscanf(release, "%u.%u", &maj, &min) != 2)
                return true;
        return maj > major || (maj == major && min >= minor);
}

unsigned knob_resets(const Knob *k) {
        assert(k);

        /* block/blk-settings.c (6.11+): queue_limits_commit_update ->
         * blk_apply_bdi_limits sets bdi->ra_pages = max3(ra_pages, 2 * io_opt,
         * VM_READAHEAD_PAGES), so a read_ahead_kb below 128 KiB comes back as 128
         * after any such commit. 6.1's queue_*_store write the field and nothing else. */
        if (k->limits_update && kernel_at_least(6, 11))
                return k->resets | KNOB_MASK(KNOB_READ_AHEAD_KB);
        return k->resets;
}

bool knob_reset_keeps(const Knob *by, const Knob *k, const char *value) {
        unsigned kb;

        assert(by);
        assert(k);
        assert(value);

        /* blk_apply_bdi_limits only raises: "the user might have increased the
         * read-ahead size through sysfs, so don't ever decrease it". io_opt is 0 on
         * the NVMe and SATA disks iotuned meets; a larger one would raise it further,
         * which a write after the limits row puts right anyway. */
        return by->limits_update && k->id == KNOB_READ_AHEAD_KB && safe_atou(value, &kb) >= 0 &&
               kb >= VM_READAHEAD_KB;
}
