/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libnvme.h>

#include "nvme.h"

/* The health of one NVMe controller: the SMART / Health Information log page
 * (LID 02h, controller scope), the temperature thresholds of Identify Controller,
 * and what Autonomous Power State Transition costs a wake-up. Read once for
 * `iotunectl diagnose`, never written. */
typedef struct NvmeHealth {
        bool smart_read;
        char *smart_error; /* why not (no device node, EPERM, the controller's status) */

        uint8_t critical_warning;                                /* SMART byte 0, enum nvme_smart_crit bits */
        int temperature_c;                                       /* composite temperature, Kelvin - 273 */
        int warning_temp_c, critical_temp_c;                     /* Identify WCTEMP / CCTEMP - 273; 0 = not reported */
        unsigned available_spare, spare_threshold, percent_used; /* percent */
        /* Low 64 bits of the 128-bit little-endian counters; UINT64_MAX when the high
         * bits are set (saturated, never wrapped). power_on_hours: hours. */
        uint64_t media_errors, num_err_log_entries, unsafe_shutdowns, power_on_hours;
        uint32_t warning_temp_time_min, critical_comp_time_min; /* lifetime minutes above WCTEMP / CCTEMP */
        uint32_t thm_transitions[2], thm_total_time_s[2];       /* thermal management temperature 1 / 2 */

        /* APST. apst_known: the numbers below mean something (Identify answered, and
         * either the controller has no APST or Get Features 0x0C answered); otherwise
         * apst_error says why not. */
        bool apst_known;
        char *apst_error;
        bool apst_supported; /* Identify APSTA bit 0 */
        bool apst_enabled;   /* Get Features 0x0C dword 0 bit 0 (APSTE): whoever set it, usually the kernel */
        /* Among the non-operational power states that the APST table in use targets:
         * the worst exit latency (EXLAT) and the worst entry + exit latency (ENLAT +
         * EXLAT, what drivers/nvme/host/core.c: nvme_configure_apst budgets against
         * ps_max_latency_us), in microseconds, and the state with the worst total. */
        unsigned apst_worst_exit_us, apst_worst_total_us;
        unsigned apst_worst_state;   /* meaningful when apst_target_states != 0 */
        uint32_t apst_target_states; /* bit n: the table sends some state to PSn */
} NvmeHealth;

/* Send Get Log Page (SMART, NSID FFFFFFFFh, RAE 0), Identify Controller and Get
 * Features 0x0C through libnvme on c->devnode. Failures are recorded in
 * smart_error / apst_error, not returned; only -ENOMEM is. */
int nvme_health_read(const NvmeCtrl *c, NvmeHealth *ret);
void nvme_health_done(NvmeHealth *h);

/* Pure decoders (the unit tests feed them bytes). */
void nvme_health_from_smart(const struct nvme_smart_log *log, NvmeHealth *h);
/* WCTEMP / CCTEMP and APSTA. */
void nvme_health_from_id_ctrl(const struct nvme_id_ctrl *id, NvmeHealth *h);
/* The 256-byte APST table (32 little-endian 64-bit entries, entry n for power
 * state n: ITPS bits 7:3 the state to go to, ITPT bits 31:8 the idle time in ms
 * before going; ITPT 0 = entry unused; NVMe 2.0 figure 326). Entries for states
 * beyond NPSS are ignored; only non-operational targets (PSD flags NOPS) count.
 * Returns the number of entries in use, or -EBADMSG (h untouched) when one of
 * them targets a state beyond NPSS. Does not touch apst_enabled. */
int nvme_health_from_apst_table(const uint8_t table[256], const struct nvme_id_ctrl *id, NvmeHealth *h);
