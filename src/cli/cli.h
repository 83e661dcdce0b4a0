/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <libudev.h>
#include <stdio.h>

#include "config.h"
#include "plan.h"
#include "tuner.h"

/* Exit codes of iotunectl, documented in iotunectl(8). */
enum {
        EXIT_OK = 0,
        EXIT_DRIFT = 1,        /* verify: some setting differs from the plan */
        EXIT_FAILED = 2,       /* some setting could not be read, written or resolved */
        EXIT_CONFIG = 3,       /* the configuration is invalid: nothing was applied */
        EXIT_NO_DEVICE = 4,    /* a named device does not exist or cannot be tuned */
        EXIT_NOT_RUNNING = 5,  /* status: iotuned is not running */
        EXIT_BUSY = 6,         /* tune: the disk is busy (--force measures anyway) */
        EXIT_INTERRUPTED = 130, /* tune: SIGINT or SIGTERM; what was measured is put back */
        EXIT_USAGE = 64,       /* bad command line (sysexits.h EX_USAGE) */
};

/* tune's options as given (cli_tune() checks them). */
typedef struct TuneArgs {
        const char *knobs, *depths, *block_size, *rounds, *runtime, *warmup, *range, *min_effect, *alpha, *busy, *plot;
        bool hipri, force, write;
} TuneArgs;

bool cli_tune_args_given(const TuneArgs *a);

typedef struct Cli {
        const char *root;        /* "/" or a test tree (--root) */
        const char *config_dir;  /* --config: the only configuration directory */
        bool json;
        bool quiet;
        bool all;                /* also list settings that are ok; diagnose: info findings */
        const char *interval;    /* diagnose --interval, as given */
        const char *as;          /* check-config --as PATH */
        TuneArgs tune;
        Tuner tuner;             /* the pipeline; iotunectl only adds argv and output */
} Cli;

int cli_init(Cli *c);
void cli_done(Cli *c);

/* The verbs. Each returns an exit code from the enum above; the steps below them
 * return -errno, and each verb maps a failure to its exit code once. */
int cli_plan(Cli *c, char **devices);
int cli_apply(Cli *c, char **devices);
int cli_verify(Cli *c, char **devices);
int cli_restore(Cli *c, char **devices);
int cli_explain(Cli *c, const char *device);
int cli_profiles(Cli *c, const char *action, const char *name);
/* candidate: with c->as, the FILE checked as if installed there (NULL without). */
int cli_check_config(Cli *c, const char *candidate);
int cli_status(Cli *c);
int cli_tune(Cli *c, char **devices);
int cli_diagnose(Cli *c, char **devices);

/* cli.c: steps shared by the verbs. */

/* Load and validate the configuration. On an invalid one the diagnostics go to
 * stderr, or into *ret_diag when the caller wants them (check-config --json),
 * and -EINVAL is returned; -ENOMEM is logged. */
int cli_load_config(Cli *c, Config **ret, Diag *ret_diag);
/* The exit code of a failed cli_load_config(). */
int cli_config_exit(int r);
/* Logs why `name` cannot be tuned (tuner_lookup()'s -errno); returns EXIT_NO_DEVICE. */
int cli_lookup_error(const char *name, int r);
/* show-status.c: the running daemon's status.json, read as untrusted input.
 * -ESRCH: iotuned is not running; other -errno: unreadable or malformed. Errors
 * are logged unless `quiet`. */
struct Status;
int cli_read_status(Cli *c, struct Status *ret, bool quiet);
/* A plan as --json or as a table and summary. */
void cli_print_plan(Cli *c, const char *command, const Plan *p, bool dry_run, bool show_ok);
bool plan_has_state(const Plan *p, SettingState st);

/* tune-plot.c: DIR/DISK.svg, the latency distributions of a measured disk's candidates. */
struct MeasureReport;
struct MeasureOptions;
int tune_plot_write(const char *dir, const struct MeasureReport *r, const struct MeasureOptions *o, char **ret_path);

/* output.c: the rendering of a reconciled plan as a table (JSON: plan-json.h). */
struct json_object;
void output_json_print(struct json_object *j);
void output_plan_table(const Plan *p, bool dry_run, bool show_ok);
void output_plan_summary(const Plan *p, const char *command, bool dry_run);
const char *output_setting_label(const Setting *s, char *buf, size_t size);

/* Colour for setting states on a terminal: off with NO_COLOR (non-empty) or
 * TERM=dumb, forced on or off with SYSTEMD_COLORS (as systemctl), otherwise on
 * when stdout is a terminal. JSON output is never coloured. */
bool output_color(void);
/* A state word padded to `width` visible columns, coloured when output_color(). */
const char *output_state_cell(const char *state, int width, char *buf, size_t size);
/* printf() a table row without the trailing blanks of empty last columns. */
void output_row(const char *fmt, ...) _printf_(1, 2);
