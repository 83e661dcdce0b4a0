/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>

#include "log.h"

/* Process-wide logging state is the one deliberate exception to "no globals":
 * like systemd's log.c it is set once by main() and only read afterwards. */
static LogTarget log_target = LOG_TARGET_STDERR;
static int log_max_level = LOG_INFO;
static const char *log_program = "iotuned";

void log_set_target(LogTarget t) {
        log_target = t;
}

LogTarget log_get_target(void) {
        return log_target;
}

LogTarget log_target_from_environment(void) {
        return getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID") ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
}

void log_set_max_level(int level) {
        log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

void log_set_program_name(const char *name) {
        assert(name);

        log_program = name;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        char buf[2048];
        va_list ap;
        int saved = errno;

        assert(file);
        assert(func);
        assert(format);

        error = error < 0 ? -error : error;
        if (level > log_max_level)
                return -error;

        /* Make %m refer to the error we were handed. */
        errno = error;
        va_start(ap, format);
        vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        if (log_target == LOG_TARGET_JOURNAL) {
                char codefile[256], codeline[32];
                snprintf(codefile, sizeof(codefile), "CODE_FILE=%s", file);
                snprintf(codeline, sizeof(codeline), "CODE_LINE=%d", line);
                if (error)
                        sd_journal_send_with_location(codefile, codeline, func, "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level, "ERRNO=%d", error, NULL);
                else
                        sd_journal_send_with_location(codefile, codeline, func, "MESSAGE=%s", buf,
                                                      "PRIORITY=%d", level, NULL);
        } else
                fprintf(stderr, "%s: %s\n", log_program, buf);

        errno = saved;
        return -error;
}
