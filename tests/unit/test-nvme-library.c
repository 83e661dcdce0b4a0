/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libnvme is opened on the first admin command (src/probe/nvme-command.c). Built
 * twice: against the real library, and with NVME_LIBRARY_SONAME naming one that
 * is not installed (LIBRARY_ABSENT), where every command must fail with ELIBACC
 * and say which library and why, without the process going down. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "nvme-command.h"
#include "tests.h"

TEST(not_loaded_before_the_first_command) {
        ASSERT_TRUE(!nvme_command_loaded());
}

#ifdef LIBRARY_ABSENT
TEST(every_command_fails_with_elibacc_and_says_why) {
        struct nvme_id_ctrl id;
        struct nvme_get_features_args g;
        struct nvme_set_features_args s;
        struct nvme_smart_log log;
        uint32_t result = 0;

        errno = 0;
        ASSERT_INT_EQ(nvme_command_identify_ctrl(-1, &id), -1);
        ASSERT_INT_EQ(errno, ELIBACC);
        nvme_feature_get_args(&g, -1, NVME_FEAT_FID_IRQ_COALESCE, &result, NULL, 0);
        errno = 0;
        ASSERT_INT_EQ(nvme_command_get_features(&g), -1);
        ASSERT_INT_EQ(errno, ELIBACC);
        nvme_feature_set_args(&s, -1, NVME_FEAT_FID_IRQ_COALESCE, 0, &result, NULL, 0);
        errno = 0;
        ASSERT_INT_EQ(nvme_command_set_features(&s), -1);
        ASSERT_INT_EQ(errno, ELIBACC);
        errno = 0;
        ASSERT_INT_EQ(nvme_command_get_log_smart(-1, NVME_NSID_ALL, true, &log), -1);
        ASSERT_INT_EQ(errno, ELIBACC);
        ASSERT_STREQ(nvme_command_status_string(0x4002), "unknown status");
        ASSERT_TRUE(!nvme_command_loaded());
        ASSERT_TRUE(nvme_command_unavailable() != NULL);
        ASSERT_TRUE(strstr(nvme_command_unavailable(), NVME_LIBRARY_SONAME) != NULL);
}

TEST_MAIN(T(not_loaded_before_the_first_command), T(every_command_fails_with_elibacc_and_says_why))
#else
TEST(loaded_by_the_first_command_which_reaches_the_ioctl) {
        struct nvme_id_ctrl id;
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        errno = 0;
        /* /dev/null has no NVMe ioctl: the command got as far as the kernel. */
        ASSERT_INT_EQ(nvme_command_identify_ctrl(fd, &id), -1);
        ASSERT_TRUE(errno != ELIBACC && errno != 0);
        close(fd);
        ASSERT_TRUE(nvme_command_loaded());
        ASSERT_TRUE(nvme_command_unavailable() == NULL);
        /* Generic status 02h, Invalid Field in Command, in libnvme's own words. */
        ASSERT_TRUE(strcmp(nvme_command_status_string(0x4002), "unknown status") != 0);
}

TEST_MAIN(T(not_loaded_before_the_first_command), T(loaded_by_the_first_command_which_reaches_the_ioctl))
#endif
