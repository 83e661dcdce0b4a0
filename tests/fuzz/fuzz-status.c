/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* status.json, the daemon's state file, as `iotunectl status` reads it:
 * status_parse() on the text (a stale or damaged file, a foreign writer: read
 * as untrusted input), then the whole of cli_status() on the same bytes as the
 * file, in the table and in --json. cli_status() takes the daemon for running
 * when "daemon"."pid" names a live process: pid 1 always does. Its output goes
 * to /dev/null. */
#include <fcntl.h>

#include "cli.h"
#include "fuzz-util.h"
#include "log.h"
#include "status.h"

static void parse(const uint8_t *data, size_t size) {
        char *text = fuzz_strndup(data, size), *error = NULL;
        Status s = {};
        int r;

        r = status_parse(text, &s, &error);
        if (r == 0) {
                /* What the printing code relies on. */
                if (!s.root || error || (s.n_devices > 0 && !s.devices))
                        abort();
                for (size_t i = 0; i < s.n_devices; i++) {
                        const StatusDevice *d = &s.devices[i];
                        if (!d->device || (d->n_settings > 0 && !d->settings))
                                abort();
                        for (size_t k = 0; k < d->n_settings; k++)
                                if (!d->settings[k].knob || (unsigned) d->settings[k].state >= _STATE_MAX)
                                        abort();
                }
                status_done(&s);
        } else if (r == -EBADMSG) {
                if (!error || !*error)
                        abort(); /* a malformed file is always explained */
        } else if (r != -ENOMEM)
                abort();
        free(error);
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *root, *path;
        static Cli c = {};
        int r;

        if (size > 1u << 20)
                return 0;
        if (!root) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
                        abort();
                close(null);
                log_set_max_level(LOG_CRIT); /* "not an iotuned status file", once per input */
                fuzz_mkdir("run/iotuned");
                root = strdup(fuzz_scratch_dir());
                path = fuzz_path("run/iotuned/status.json");
                c.root = root;
                if (cli_init(&c) < 0) /* once: the Tuner reads the topology */
                        abort();
        }
        parse(data, size);

        fuzz_write_file(path, data, size);
        for (int json = 0; json <= 1; json++) {
                c.json = json;
                r = cli_status(&c);
                if (r != EXIT_OK && r != EXIT_DRIFT && r != EXIT_FAILED && r != EXIT_NOT_RUNNING)
                        abort();
        }
        fflush(stdout);
        return 0;
}
