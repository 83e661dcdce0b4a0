/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

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

/* ---- libnvme, loaded on first use ------------------------------------------------ */

static struct {
        pthread_once_t once;
        void *handle; /* NULL until loaded, and for good when loading failed */
        typeof(nvme_identify) *identify;
        typeof(nvme_get_features) *get_features;
        typeof(nvme_set_features) *set_features;
        typeof(nvme_get_log_page) *get_log_page;
        typeof(nvme_status_to_string) *status_to_string;
        char error[256];
} lib = { .once = PTHREAD_ONCE_INIT };

static void load_library(void) {
        /* RTLD_LOCAL: its symbols stay out of the global scope; RTLD_NODELETE:
         * never unmapped, like a library linked at build time. */
        void *h = dlopen(NVME_LIBRARY_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        const char *e;

        if (!h) {
                e = dlerror();
                (void) snprintf(lib.error, sizeof(lib.error), "%s", e ?: "cannot load " NVME_LIBRARY_SONAME);
                return;
        }
        lib.identify = (typeof(lib.identify)) dlsym(h, "nvme_identify");
        lib.get_features = (typeof(lib.get_features)) dlsym(h, "nvme_get_features");
        lib.set_features = (typeof(lib.set_features)) dlsym(h, "nvme_set_features");
        lib.get_log_page = (typeof(lib.get_log_page)) dlsym(h, "nvme_get_log_page");
        lib.status_to_string = (typeof(lib.status_to_string)) dlsym(h, "nvme_status_to_string");
        if (!lib.identify || !lib.get_features || !lib.set_features || !lib.get_log_page || !lib.status_to_string) {
                (void) snprintf(lib.error, sizeof(lib.error), "%s lacks one of nvme_identify, nvme_get_features, "
                                "nvme_set_features, nvme_get_log_page, nvme_status_to_string (libnvme 1.3 "
                                "or later has them)", NVME_LIBRARY_SONAME);
                return;
        }
        __atomic_store_n(&lib.handle, h, __ATOMIC_RELEASE);
}

static bool library(void) {
        (void) pthread_once(&lib.once, load_library);
        if (lib.handle)
                return true;
        errno = ELIBACC;
        return false;
}

int nvme_command_identify_ctrl(int fd, struct nvme_id_ctrl *id) {
        /* What libnvme's inline nvme_identify_ctrl() builds: CNS 01h, no namespace. */
        struct nvme_identify_args a = {
                .args_size = sizeof(a),
                .fd = fd,
                .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .cns = NVME_IDENTIFY_CNS_CTRL,
                .csi = NVME_CSI_NVM,
                .nsid = NVME_NSID_NONE,
                .cntid = NVME_CNTLID_NONE,
                .cns_specific_id = NVME_CNSSPECID_NONE,
                .uuidx = NVME_UUID_NONE,
                .data = id,
        };

        assert(id);

        return library() ? lib.identify(&a) : -1;
}

int nvme_command_get_features(struct nvme_get_features_args *a) {
        assert(a);

        return library() ? lib.get_features(a) : -1;
}

int nvme_command_set_features(struct nvme_set_features_args *a) {
        assert(a);

        return library() ? lib.set_features(a) : -1;
}

int nvme_command_get_log_smart(int fd, uint32_t nsid, bool rae, struct nvme_smart_log *log) {
        /* What libnvme's inline nvme_get_log_smart() builds: the whole page at once. */
        struct nvme_get_log_args a = {
                .args_size = sizeof(a),
                .fd = fd,
                .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .lid = NVME_LOG_LID_SMART,
                .len = sizeof(*log),
                .nsid = nsid,
                .csi = NVME_CSI_NVM,
                .lsi = NVME_LOG_LSI_NONE,
                .lsp = NVME_LOG_LSP_NONE,
                .uuidx = NVME_UUID_NONE,
                .rae = rae,
                .log = log,
        };

        assert(log);

        return library() ? lib.get_log_page(fd, NVME_LOG_PAGE_PDU_SIZE, &a) : -1;
}

const char *nvme_command_status_string(int status) {
        return library() ? lib.status_to_string(status, false) : "unknown status";
}

const char *nvme_command_unavailable(void) {
        (void) pthread_once(&lib.once, load_library);
        return lib.handle ? NULL : lib.error;
}

bool nvme_command_loaded(void) {
        return __atomic_load_n(&lib.handle, __ATOMIC_ACQUIRE) != NULL;
}
