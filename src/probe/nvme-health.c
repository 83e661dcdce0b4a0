/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <endian.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libnvme.h>

#include "nvme-command.h"
#include "nvme-health.h"
#include "util.h"

/* Kelvin to degrees Celsius, as nvme-cli prints them. */
#define KELVIN_OFFSET 273

void nvme_health_done(NvmeHealth *h) {
        assert(h);

        free(h->smart_error);
        free(h->apst_error);
        *h = (NvmeHealth){};
}

/* The SMART counters are 128-bit little-endian integers; 64 bits are more than any
 * drive reaches (2^64 hours, 2^64 errors), so a set high half is saturated rather
 * than wrapped: it means garbage or a vendor's sentinel, never a small number. */
static uint64_t le128_saturated(const uint8_t b[16]) {
        uint64_t lo = 0;

        for (unsigned i = 8; i < 16; i++)
                if (b[i])
                        return UINT64_MAX;
        for (unsigned i = 0; i < 8; i++)
                lo |= (uint64_t) b[i] << (8 * i);
        return lo;
}

void nvme_health_from_smart(const struct nvme_smart_log *log, NvmeHealth *h) {
        assert(log);
        assert(h);

        h->critical_warning = log->critical_warning;
        /* Composite Temperature, bytes 2:1, Kelvin (NVMe 2.0 figure 207). */
        h->temperature_c = (int) (log->temperature[0] | (unsigned) log->temperature[1] << 8) - KELVIN_OFFSET;
        h->available_spare = log->avail_spare;
        h->spare_threshold = log->spare_thresh;
        h->percent_used = log->percent_used;
        h->power_on_hours = le128_saturated(log->power_on_hours);
        h->unsafe_shutdowns = le128_saturated(log->unsafe_shutdowns);
        h->media_errors = le128_saturated(log->media_errors);
        h->num_err_log_entries = le128_saturated(log->num_err_log_entries);
        h->warning_temp_time_min = le32toh(log->warning_temp_time);
        h->critical_comp_time_min = le32toh(log->critical_comp_time);
        h->thm_transitions[0] = le32toh(log->thm_temp1_trans_count);
        h->thm_transitions[1] = le32toh(log->thm_temp2_trans_count);
        h->thm_total_time_s[0] = le32toh(log->thm_temp1_total_time);
        h->thm_total_time_s[1] = le32toh(log->thm_temp2_total_time);
}

void nvme_health_from_id_ctrl(const struct nvme_id_ctrl *id, NvmeHealth *h) {
        uint16_t wc, cc;

        assert(id);
        assert(h);

        /* WCTEMP and CCTEMP are Kelvin; 0 means the controller reports none. */
        wc = le16toh(id->wctemp);
        cc = le16toh(id->cctemp);
        h->warning_temp_c = wc ? (int) wc - KELVIN_OFFSET : 0;
        h->critical_temp_c = cc ? (int) cc - KELVIN_OFFSET : 0;
        h->apst_supported = id->apsta & NVME_CTRL_APSTA_APST;
}

int nvme_health_from_apst_table(const uint8_t table[256], const struct nvme_id_ctrl *id, NvmeHealth *h) {
        unsigned worst_exit = 0, worst_state = 0, used = 0;
        uint64_t worst_total = 0;
        uint32_t targets = 0;
        bool any = false;

        assert(table);
        assert(id);
        assert(h);

        /* NPSS is the index of the last power state (0's based); the table has an
         * entry for each of the 32 possible states, and those beyond NPSS are
         * reserved: the kernel leaves them zero (drivers/nvme/host/core.c:
         * nvme_configure_apst, which writes (state << 3) | (transition_ms << 8)). */
        for (unsigned s = 0; s <= id->npss && s < 32; s++) {
                uint64_t e = 0, total;
                unsigned itps, exit_us;
                uint32_t itpt;

                for (unsigned i = 0; i < 8; i++)
                        e |= (uint64_t) table[s * 8 + i] << (8 * i);
                itpt = (uint32_t) (e >> 8) & 0xffffffu;
                itps = (unsigned) (e >> 3) & 0x1fu;
                if (itpt == 0)
                        continue;
                if (itps > id->npss)
                        return -EBADMSG;
                used++;
                /* Only a non-operational state is a sleep the next I/O must wake the
                 * drive from; the kernel never targets an operational one. */
                if (!(id->psd[itps].flags & NVME_PSD_FLAGS_NOPS))
                        continue;
                targets |= UINT32_C(1) << itps;
                exit_us = le32toh(id->psd[itps].exlat);
                total = (uint64_t) exit_us + le32toh(id->psd[itps].enlat);
                worst_exit = MAX(worst_exit, exit_us);
                if (!any || total > worst_total) {
                        worst_total = total;
                        worst_state = itps;
                        any = true;
                }
        }

        h->apst_target_states = targets;
        h->apst_worst_exit_us = worst_exit;
        h->apst_worst_total_us = worst_total > UINT32_MAX ? UINT32_MAX : (unsigned) worst_total;
        h->apst_worst_state = worst_state;
        return (int) used;
}

/* As nvme.c opens the controller: read-only is enough for admin passthrough of log
 * pages, Identify and Get Features as root; O_NONBLOCK so a FIFO planted at the
 * node cannot block the open. Only a character device is talked to. */
static int open_ctrl(const NvmeCtrl *c, char **ret_why) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        assert(c);
        assert(ret_why);

        if (!c->devnode) {
                *ret_why = strdup("the controller has no device node");
                return *ret_why ? -ENODEV : -ENOMEM;
        }
        fd = open(c->devnode, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                if (asprintf_safe(ret_why, "cannot open %s: %s%s", c->devnode, strerror(-r),
                                  r == -EPERM || r == -EACCES ? " (admin commands need root with CAP_SYS_ADMIN)" : "") <
                    0)
                        return -ENOMEM;
                return r;
        }
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if (!S_ISCHR(st.st_mode))
                r = -ENOTTY;
        else
                return TAKE_FD(fd);
        if (asprintf_safe(ret_why, "%s: %s", c->devnode, r == -ENOTTY ? "not a character device" : strerror(-r)) < 0)
                return -ENOMEM;
        return r;
}

/* libnvme returns -1 with errno when the ioctl failed, the NVMe status (> 0) when the
 * controller completed the command with an error. 0, -ENOMEM, or -EIO with *ret_why. */
static int command_result(int r, const char *what, char **ret_why) {
        assert(what);
        assert(ret_why);

        if (r == 0)
                return 0;
        if (r < 0) {
                r = errno > 0 ? errno : EIO;
                if (r == ELIBACC ? asprintf_safe(ret_why, "%s not sent: libnvme is not available (%s)", what,
                                                 nvme_command_unavailable() ?: "unknown error") < 0
                                 : asprintf_safe(ret_why, "%s failed: %s", what, strerror(r)) < 0)
                        return -ENOMEM;
                return -EIO;
        }
        if (asprintf_safe(ret_why, "controller answered %s with status 0x%x (%s)", what,
                          (unsigned) nvme_status_get_value(r), nvme_command_status_string(r)) < 0)
                return -ENOMEM;
        return -EIO;
}

/* Identify Controller, then Get Features 0x0C with its table. Fills the APST part. */
static int read_apst(int fd, NvmeHealth *h) {
        struct nvme_id_ctrl id = {};
        struct nvme_get_features_args a;
        uint8_t table[NVME_APST_TABLE_BYTES] = {};
        uint32_t dw = 0;
        int r;

        assert(fd >= 0);
        assert(h);

        r = command_result(nvme_command_identify_ctrl(fd, &id), "Identify Controller", &h->apst_error);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        nvme_health_from_id_ctrl(&id, h);
        if (!h->apst_supported) {
                h->apst_known = true;
                return 0;
        }
        /* One command gives both: dword 0 bit 0 is APSTE, the data the table. The
         * words come from nvme-command.h (libnvme 1.3's nvme_get_features_auto_pst()
         * is one of the helpers that send the wrong ones). */
        nvme_feature_get_args(&a, fd, NVME_FEAT_FID_AUTO_PST, &dw, table, sizeof(table));
        r = command_result(nvme_command_get_features(&a), "Get Features 0x0c (APST)", &h->apst_error);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        h->apst_enabled = dw & 1u;
        r = nvme_health_from_apst_table(table, &id, h);
        if (r < 0) {
                h->apst_error = strdup("the APST table names a power state beyond NPSS");
                return h->apst_error ? 0 : -ENOMEM;
        }
        h->apst_known = true;
        return 0;
}

int nvme_health_read(const NvmeCtrl *c, NvmeHealth *ret) {
        _cleanup_close_ int fd = -1;
        struct nvme_smart_log log = {};
        NvmeHealth h = {};
        int r;

        assert(c);
        assert(ret);

        fd = open_ctrl(c, &h.smart_error);
        if (fd == -ENOMEM)
                return -ENOMEM;
        if (fd < 0) {
                h.apst_error = strdup(h.smart_error);
                if (!h.apst_error) {
                        nvme_health_done(&h);
                        return -ENOMEM;
                }
                *ret = h;
                return 0;
        }

        /* Controller scope (NSID FFFFFFFFh). RAE 1 (Retain Asynchronous Event): a
         * read-only look must not acknowledge a pending SMART / Health event for
         * the tool that handles it (smartd, a fleet agent); with RAE 0 the
         * controller would consider it seen. */
        r = command_result(nvme_command_get_log_smart(fd, NVME_NSID_ALL, true, &log), "Get Log Page 02h (SMART)",
                           &h.smart_error);
        if (r == -ENOMEM)
                goto fail;
        if (r == 0) {
                nvme_health_from_smart(&log, &h);
                h.smart_read = true;
        }
        r = read_apst(fd, &h);
        if (r < 0)
                goto fail;
        *ret = h;
        return 0;
fail:
        nvme_health_done(&h);
        return r;
}
