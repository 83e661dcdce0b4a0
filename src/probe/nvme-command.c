/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "nvme-command.h"

void nvme_num_queues_from_dw(uint32_t dw, unsigned *ret_sq, unsigned *ret_cq) {
        assert(ret_sq);
        assert(ret_cq);

        *ret_sq = NVME_FEAT_NRQS_NSQR(dw) + 1;
        *ret_cq = NVME_FEAT_NRQS_NCQR(dw) + 1;
}

void nvme_feature_get_args(struct nvme_get_features_args *a, int fd, uint8_t fid, uint32_t *result, void *data,
                           uint32_t data_len) {
        assert(a);
        assert(result);

        *a = (struct nvme_get_features_args) {
                .args_size = sizeof(*a),
                .fd = fd,
                .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .nsid = 0,
                .sel = NVME_GET_FEATURES_SEL_CURRENT,
                .cdw11 = 0,
                .uuidx = NVME_UUID_NONE,
                .fid = fid,
                .data = data,
                .data_len = data_len,
                .result = result,
        };
}

void nvme_feature_caps_args(struct nvme_get_features_args *a, int fd, uint8_t fid, uint32_t *result) {
        assert(a);
        assert(result);

        nvme_feature_get_args(a, fd, fid, result, NULL, 0);
        a->sel = NVME_GET_FEATURES_SEL_SUPPORTED;
}

void nvme_feature_set_args(struct nvme_set_features_args *a, int fd, uint8_t fid, uint32_t cdw11, uint32_t *result,
                           void *data, uint32_t data_len) {
        assert(a);
        assert(result);

        *a = (struct nvme_set_features_args) {
                .args_size = sizeof(*a),
                .fd = fd,
                .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .nsid = 0,
                .cdw11 = cdw11,
                .save = false, /* SV=0: a controller reset brings back the default, and we re-assert */
                .uuidx = NVME_UUID_NONE,
                .fid = fid,
                .data = data,
                .data_len = data_len,
                .result = result,
        };
}
