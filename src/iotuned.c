/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iotuned: argv and wiring only; the daemon is src/daemon/ (manager.h). */
#include <getopt.h>
#include <stdio.h>

#include "log.h"
#include "manager.h"
#include "timing.h"
#include "util.h"

static void help(void) {
        printf("iotuned — keep block devices tuned\n"
               "\n"
               "Usage: iotuned [OPTIONS]\n"
               "\n"
               "Tunes every disk per its profile at start and on udev add/change events,\n"
               "re-asserts the values every reassert.interval against drift (with back-off\n"
               "when something keeps reverting a value), reloads on SIGHUP, and on SIGTERM\n"
               "restores the original values (restore_on_stop). Meant to run as the\n"
               "iotuned.service systemd unit (Type=notify); see iotuned(8).\n"
               "\n"
               "Options:\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "     --config DIR    Read configuration only from DIR (plus built-in defaults)\n"
               "     --root DIR      Treat DIR as / for configuration and /run (tests)\n"
               "     --timing        Log where each start, batch of events, drift check,\n"
               "                     reload and stop spent its time (\"timing:\" lines at\n"
               "                     info level), without the rest of the debug output\n"
               "  -v --verbose       Debug logging (with the timing lines)\n");
}

enum { ARG_VERSION = 0x100, ARG_CONFIG, ARG_ROOT, ARG_TIMING };

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "root", required_argument, NULL, ARG_ROOT },
                { "verbose", no_argument, NULL, 'v' },
                { "timing", no_argument, NULL, ARG_TIMING },
                {},
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        const char *config_dir = NULL, *root = NULL;
        int c, r;

        timing_main_usec = now_usec(CLOCK_MONOTONIC);
        log_set_program_name("iotuned");
        log_set_target(log_target_from_environment());

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("iotuned %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_CONFIG:
                        config_dir = optarg;
                        break;
                case ARG_ROOT:
                        root = optarg;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_TIMING:
                        timing_log_level = LOG_INFO;
                        break;
                default:
                        return 64;
                }
        if (optind < argc) {
                log_error("This program takes no arguments.");
                return 64;
        }

        r = manager_new(root, config_dir, &m);
        if (r < 0)
                return log_error_errno(r, "Cannot set up: %m"), 1;
        r = manager_start(m);
        if (r < 0)
                return 1;
        r = manager_run(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m"), 1;
        return 0;
}
