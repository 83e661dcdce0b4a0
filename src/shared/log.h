/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/* Logging goes to stderr for the CLI and to the journal (with structured fields)
 * for the daemon. Helpers in the library log at debug level only; callers decide
 * what the user sees. */
typedef enum LogTarget {
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
} LogTarget;

void log_set_target(LogTarget t);
LogTarget log_get_target(void);
/* The one decision: the journal when started by systemd (it sets JOURNAL_STREAM
 * for a unit's stdout/stderr and INVOCATION_ID for every unit), stderr otherwise.
 * The daemon's main() sets it; its structured events (events.c) follow it. */
LogTarget log_target_from_environment(void);
void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_program_name(const char *name);

/* Returns -abs(error) so callers can `return log_error_errno(r, "...: %m")`.
 * %m expands to strerror(error), not the current errno. */
int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);

#define log_full_errno(level, error, ...) \
        log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) (void) log_full_errno(level, 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")
