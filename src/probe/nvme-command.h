/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <libnvme.h>

/* The words of the generic Get/Set Features admin commands, as the controller
 * probe sends them. Pure functions: the unit tests check every word sent against
 * the NVMe Base Specification (2.0, 5.27.1). Only libnvme's generic
 * nvme_get_features() and nvme_set_features() are used, with the argument blocks
 * built here: libnvme 1.3's dedicated helpers for Interrupt Coalescing and APST
 * send the wrong words (fixed in libnvme 1.6). */

/* Autonomous Power State Transition (FID 0x0C): Get and Set Features transfer the
 * 256-byte table of 32 64-bit entries; with APSTE 0 the kernel sends it zeroed
 * (drivers/nvme/host/core.c: nvme_configure_apst), as we do. */
#define NVME_APST_TABLE_BYTES 256u

/* Get Features with SEL 11b (supported capabilities) answers in dword 0: bit 0
 * saveable, bit 1 namespace specific, bit 2 changeable (NVMe 2.0 figure 193). */
#define NVME_FEATURE_CAP_CHANGEABLE (1u << 2)

/* Number of Queues (FID 0x07) completion dword 0: NSQA bits 15:0, NCQA bits 31:16,
 * both 0's based. Returns the granted I/O submission and completion queue counts. */
void nvme_num_queues_from_dw(uint32_t dw, unsigned *ret_sq, unsigned *ret_cq);

/* The argument blocks handed to libnvme's generic nvme_get_features() and
 * nvme_set_features(): current value, no namespace, not saved across resets.
 * data may be NULL (data_len 0); result must not be. */
void nvme_feature_get_args(struct nvme_get_features_args *a, int fd, uint8_t fid, uint32_t *result, void *data,
                           uint32_t data_len);
/* The same with SEL = supported capabilities. */
void nvme_feature_caps_args(struct nvme_get_features_args *a, int fd, uint8_t fid, uint32_t *result);
void nvme_feature_set_args(struct nvme_set_features_args *a, int fd, uint8_t fid, uint32_t cdw11, uint32_t *result,
                           void *data, uint32_t data_len);

/* libnvme itself, opened on the first admin command instead of at exec: the
 * library and what it links (libcrypto, ~4.7 MB of it) cost every exec of
 * iotuned and iotunectl ~15 ms and 1.6 MB of resident memory in the test-bed
 * guest, and a daemon whose profiles set no controller feature never sends a
 * command. The calls below behave as libnvme's: -1 with errno when the ioctl
 * failed, the NVMe status (> 0) when the controller answered with one. When the
 * library cannot be loaded they return -1 with errno ELIBACC, and
 * nvme_command_unavailable() says why. Thread-safe (the first call loads it). */
#ifndef NVME_LIBRARY_SONAME /* a test builds this file with a name that is not there */
#define NVME_LIBRARY_SONAME "libnvme.so.1"
#endif

int nvme_command_identify_ctrl(int fd, struct nvme_id_ctrl *id);
int nvme_command_get_features(struct nvme_get_features_args *a);
int nvme_command_set_features(struct nvme_set_features_args *a);
/* Get Log Page 02h (SMART / Health Information), `rae` as in the command. */
int nvme_command_get_log_smart(int fd, uint32_t nsid, bool rae, struct nvme_smart_log *log);
/* libnvme's nvme_status_to_string(); "unknown status" without the library. */
const char *nvme_command_status_string(int status);
/* NULL once the library is loaded; otherwise (after a call above failed with
 * ELIBACC) which library could not be loaded, and the loader's reason. */
const char *nvme_command_unavailable(void);
/* Whether the library has been loaded (for tests and the timing of a start). */
bool nvme_command_loaded(void);
