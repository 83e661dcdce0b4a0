/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `iotunectl status`: the daemon's /run/iotuned/status.json as cli_status()
 * reads and prints it, in the table and in --json. The file is the daemon's,
 * but a stale or damaged one (a full /run, a foreign writer) is read all the
 * same. cli_status() takes the daemon for running when "daemon"."pid" names a
 * live process: pid 1 always does. Its output goes to /dev/null. */
#include <fcntl.h>

#include "cli.h"
#include "fuzz-util.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *root, *path;
        Cli c = {};
        int r;

        if (!root) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                        abort();
                close(null);
                log_set_max_level(LOG_CRIT); /* "not an iotuned status file", once per input */
                fuzz_mkdir("run/iotuned");
                root = strdup(fuzz_scratch_dir());
                path = fuzz_path("run/iotuned/status.json");
        }
        fuzz_write_file(path, data, size);
        c.root = root;
        for (int json = 0; json <= 1; json++) {
                c.json = json;
                r = cli_status(&c);
                if (r != EXIT_OK && r != EXIT_DRIFT && r != EXIT_FAILED && r != EXIT_NOT_RUNNING)
                        abort();
        }
        fflush(stdout);
        return 0;
}
