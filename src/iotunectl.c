/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iotunectl: argv parsing and dispatch only; the work is in src/cli/. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "plan-json.h"
#include "escape.h"
#include "log.h"
#include "util.h"

static void help(void) {
        printf("iotunectl — plan, apply and check I/O tuning of block devices\n"
               "\n"
               "Usage: iotunectl [OPTIONS] COMMAND [ARGS...]\n"
               "\n"
               "Commands:\n"
               "  plan [DEVICE...]        Show what would change, per device and knob (dry run;\n"
               "                          writes nothing). The default command.\n"
               "  apply [DEVICE...]       Apply the plan once: write what differs, read every\n"
               "                          value back, print what changed. Original values are\n"
               "                          recorded under /run/iotuned/originals first.\n"
               "  verify [DEVICE...]      Check every planned value against the kernel.\n"
               "                          Exit 0: all as desired, 1: drift, 2: errors.\n"
               "  restore [DEVICE...]     Put recorded original values back (also after a crash);\n"
               "                          without DEVICE also remove the NVMe queue-count drop-in\n"
               "                          /etc/modprobe.d/iotuned-nvme.conf.\n"
               "  status                  What the running iotuned has tuned, drift and conflicts.\n"
               "                          Exit 0: all as desired, 1: drift held back, 2: errors,\n"
               "                          5: iotuned is not running.\n"
               "  explain DEVICE          Which rule matched and why, the resolved profile and\n"
               "                          the file:line:column each value came from.\n"
               "  profiles [list]         List the profiles and the files they come from.\n"
               "  profiles show NAME      Show a profile after 'extends:' is resolved.\n"
               "  check-config            Validate the configuration; print every error as\n"
               "                          file:line:column.\n"
               "  check-config --as PATH FILE\n"
               "                          Validate it as if FILE were installed at PATH (a\n"
               "                          drop-in, a profile or the main file), touching\n"
               "                          nothing: for Ansible's validate:, before a reload.\n"
               "  tune DEVICE...          Measure: A/B-test scheduler, nr_requests, rq_affinity,\n"
               "                          nomerges and wbt_lat_usec with read-only io_uring reads,\n"
               "                          keep what wins beyond the noise, propose a drop-in\n"
               "                          (written with --write); see 'iotunectl tune --help'.\n"
               "  diagnose [DEVICE...]    Read-only: sample each disk's load, interrupts and poll\n"
               "                          queues, read the drive's health, name who else writes\n"
               "                          its knobs (udev rules with file:line, TuneD, irqbalance);\n"
               "                          findings most severe first. Exit 0: nothing above a\n"
               "                          notice, 1: warnings, 2: a critical finding.\n"
               "\n"
               "DEVICE is a kernel name (nvme0n1, sda, nvme1c1n1) or a /dev path of a whole disk.\n"
               "Without DEVICE, every disk is considered (loop, dm, md and zram only when the\n"
               "configuration's discovery: section enables them).\n"
               "\n"
               "Options:\n"
               "  -h --help               Show this help; with a COMMAND, that command's help\n"
               "                          (iotunectl plan --help, iotunectl help plan)\n"
               "  -V --version            Show the version\n"
               "     --no-pager           Accepted for systemctl-style scripts; iotunectl never\n"
               "                          starts a pager\n"
               "     --json               Machine-readable output (schema version %d, see iotunectl(8))\n"
               "  -a --all                apply/verify/restore: also list settings that are already ok\n"
               "  -q --quiet              Print only the summary line\n"
               "     --root DIR           Treat DIR as / for configuration, /run and /etc/modprobe.d\n"
               "                          (test trees)\n"
               "     --config DIR         Read configuration only from DIR (plus the built-in\n"
               "                          defaults) instead of /etc, /run and /usr/lib\n"
               "  -v --verbose            Debug logging to stderr\n"
               "\n"
               "States are coloured on a terminal; NO_COLOR=1 or SYSTEMD_COLORS=0 turns that off,\n"
               "SYSTEMD_COLORS=1 forces it on.\n"
               "\n"
               "Configuration: %s/iotuned.yaml overrides %s/ and %s/;\n"
               "drop-ins in iotuned.yaml.d/*.yaml, profiles in profiles/*.yaml. See iotuned.yaml(5).\n"
               "\n"
               "Exit status: 0 success, 1 drift found (verify), 2 a setting failed,\n"
               "3 invalid configuration (nothing applied), 4 no such device or profile,\n"
               "5 iotuned not running (status), 6 disk busy (tune), 64 usage error,\n"
               "130 interrupted (tune, everything measured put back).\n"
               "\n"
               "Examples:\n"
               "  iotunectl plan                  # what would iotuned do on this machine?\n"
               "  iotunectl apply nvme0n1         # tune one disk now\n"
               "  iotunectl verify --json         # fleet check; exit code says drift or not\n"
               "  iotunectl explain nvme0n1       # why does it get that profile?\n",
               REPORT_SCHEMA_VERSION, IOTUNED_ETC_DIR, IOTUNED_RUN_DIR, IOTUNED_VENDOR_DIR);
}

/* The commands that check their arguments before cli_*() does the work; the others are
 * cli_*() itself. Each returns the exit status. `args`: what follows the command, NULL
 * terminated. */
static int verb_explain(Cli *cli, char **args) {
        if (strv_length(args) != 1) {
                log_error("explain takes exactly one DEVICE, e.g. 'iotunectl explain nvme0n1'.");
                return EXIT_USAGE;
        }
        return cli_explain(cli, args[0]);
}

static int verb_profiles(Cli *cli, char **args) {
        size_t nargs = strv_length(args);
        const char *action = nargs > 0 ? args[0] : "list";

        if (streq(action, "list") && nargs <= 1)
                return cli_profiles(cli, "list", NULL);
        if (streq(action, "show") && nargs == 2)
                return cli_profiles(cli, "show", args[1]);
        log_error("Usage: iotunectl profiles [list | show NAME]");
        return EXIT_USAGE;
}

static int verb_status(Cli *cli, char **args) {
        if (strv_length(args) != 0) {
                log_error("status takes no arguments.");
                return EXIT_USAGE;
        }
        return cli_status(cli);
}

static int verb_tune(Cli *cli, char **args) {
        if (strv_length(args) == 0) {
                log_error("tune takes one or more DEVICEs, e.g. 'iotunectl tune nvme0n1': it measures "
                          "each disk named, never every disk at once.");
                return EXIT_USAGE;
        }
        return cli_tune(cli, args);
}

static int verb_check_config(Cli *cli, char **args) {
        size_t nargs = strv_length(args);

        if (cli->as && nargs != 1) {
                log_error("check-config --as PATH takes one FILE to check as if it were installed at PATH, "
                          "e.g. 'iotunectl check-config --as /etc/iotuned/iotuned.yaml.d/50-site.yaml "
                          "new.yaml'.");
                return EXIT_USAGE;
        }
        if (!cli->as && nargs != 0) {
                log_error("check-config takes no arguments (use --config DIR to check another tree, or "
                          "--as PATH FILE to check FILE as if it were installed at PATH).");
                return EXIT_USAGE;
        }
        return cli_check_config(cli, cli->as ? args[0] : NULL);
}

/* One command: what runs it, and its help (`iotunectl COMMAND --help` or
 * `iotunectl help COMMAND`). */
typedef struct Verb {
        const char *name;
        int (*run)(Cli *cli, char **args); /* after cli_init() */
        const char *usage;   /* after "iotunectl [OPTIONS] " */
        const char *text;    /* what it does, exit status */
        const char *options; /* the options that matter to it */
        const char *examples;
} Verb;

static const Verb verbs[] = {
        { "plan", cli_plan, "plan [DEVICE...]",
          "Show what iotuned would change, per device and knob, and why: a dry run that\n"
          "writes nothing. The default command. Each row names the profile and the\n"
          "current, desired and planned state; --all also lists settings already ok.\n",
          "  --json, --all, --quiet, --root DIR, --config DIR\n",
          "  iotunectl plan\n"
          "  iotunectl plan nvme0n1 --json | jq '.devices[0].settings'\n" },
        { "apply", cli_apply, "apply [DEVICE...]",
          "Apply the plan once: record each original value under /run/iotuned/originals\n"
          "(kept until restore), write what differs, read every value back and print\n"
          "what changed. A disk whose original cannot be recorded is not written.\n"
          "Exit 0: all as desired, 2: a setting failed, 3: invalid configuration\n"
          "(nothing applied), 4: no such device.\n",
          "  --json, --all, --quiet, --root DIR, --config DIR\n",
          "  iotunectl apply nvme0n1\n"
          "  iotunectl apply && iotunectl verify\n" },
        { "verify", cli_verify, "verify [DEVICE...]",
          "Check every planned value against the kernel, writing nothing.\n"
          "Exit 0: all as desired, 1: drift found, 2: errors.\n",
          "  --json, --all, --quiet, --root DIR, --config DIR\n",
          "  iotunectl verify --quiet || iotunectl verify --json > /var/tmp/iotune.json\n" },
        { "restore", cli_restore, "restore [DEVICE...]",
          "Put the recorded original values back (also after a crash of iotuned or of a\n"
          "previous apply) and forget them; without DEVICE also remove the NVMe\n"
          "queue-count drop-in /etc/modprobe.d/iotuned-nvme.conf. Stop iotuned first, or\n"
          "it tunes the disks again.\n",
          "  --json, --all, --quiet, --root DIR\n",
          "  systemctl stop iotuned   # restores already, with restore_on_stop: true\n"
          "  iotunectl restore sda\n" },
        { "status", verb_status, "status",
          "What the running iotuned has tuned: each disk's profile and rule, its settings\n"
          "by state (ok, changed, drifted, failed, ...), drifts corrected, conflicts, and\n"
          "irqbalance. Read from /run/iotuned/status.json.\n"
          "Exit 0: all as desired, 1: drift held back, 2: errors, 5: iotuned is not running.\n",
          "  --json, --root DIR\n",
          "  iotunectl status\n"
          "  iotunectl status --json | jq '.devices[] | select(.settings[].state == \"drifted\")'\n" },
        { "explain", verb_explain, "explain DEVICE",
          "Why DEVICE gets its profile: every rule in order with whether it matched and\n"
          "why, the resolved profile, and the file:line:column each value comes from.\n",
          "  --json, --root DIR, --config DIR\n",
          "  iotunectl explain nvme0n1\n" },
        { "profiles", verb_profiles, "profiles [list | show NAME]",
          "List the profiles and the files they come from, or show one profile with\n"
          "'extends:' resolved and where each value is set.\n"
          "Exit 4: no such profile.\n",
          "  --json, --root DIR, --config DIR\n",
          "  iotunectl profiles\n"
          "  iotunectl profiles show latency\n" },
        { "check-config", verb_check_config, "check-config [--as PATH FILE]",
          "Validate the configuration (main file, drop-ins, profiles) and print every\n"
          "error as file:line:column. The unit runs it before start and reload.\n"
          "With --as PATH FILE, the configuration is checked as if FILE were installed\n"
          "at PATH (the main file iotuned.yaml, a drop-in in iotuned.yaml.d/ or a profile\n"
          "in profiles/ of a configuration directory): FILE takes the place of the file\n"
          "at PATH, or is added if there is none; everything else is read as installed.\n"
          "Nothing at PATH is read or written, and errors in FILE name FILE. This is the\n"
          "check configuration management runs before it installs a file, e.g. Ansible's\n"
          "  validate: 'iotunectl check-config --as /etc/iotuned/iotuned.yaml.d/50-site.yaml %s'\n"
          "Exit 0: valid, 3: invalid, 64: PATH is not a place configuration is read from.\n",
          "  --as PATH, --quiet, --json, --root DIR, --config DIR\n",
          "  iotunectl check-config\n"
          "  iotunectl check-config --config ./staging\n"
          "  iotunectl check-config --as /etc/iotuned/profiles/db.yaml ./db.yaml\n" },
        { "tune", verb_tune, "tune DEVICE... [--knobs LIST] [--rounds N] [--runtime TIME] [--write]",
          "Measure what each knob does on this disk and keep what wins. For scheduler,\n"
          "nr_requests, rq_affinity, nomerges and wbt_lat_usec, the profile's value and a\n"
          "small candidate set are set one after the other through the same path as\n"
          "apply (originals recorded first); under each, O_DIRECT random reads through\n"
          "io_uring run at each queue depth (never a write: the disk is opened\n"
          "read-only). Candidates alternate within each round (ABAB), and one replaces\n"
          "the profile's value only when the rounds favouring it (its gain averaged over\n"
          "IOPS and p99 at each depth) pass a one-sided sign test at --alpha (7 of 7\n"
          "rounds: p = 0.008), that gain's median is at least --min-effect, and no single\n"
          "measure is worse likewise; ties keep the profile's value. Every value is put back\n"
          "at the end, also on Ctrl-C or SIGTERM, and iotuned leaves the disk alone\n"
          "meanwhile (" IOTUNED_RUN_DIR "/hold). A disk busier than --busy is refused\n"
          "unless --force. The winners are proposed as a drop-in,\n"
          IOTUNED_ETC_DIR "/iotuned.yaml.d/60-measured-SERIAL.yaml, a rule matching\n"
          "the drive's serial with set:; shown as a diff, written only with --write\n"
          "(then 'systemctl reload iotuned' applies it).\n"
          "Exit 0: measured, 2: a failure, 4: no such disk, 6: busy, 130: interrupted.\n",
          "  --knobs LIST          scheduler,nr_requests,rq_affinity,nomerges,wbt_lat_usec,poll\n"
          "                        (default: all; poll: interrupt against polled reads, on a disk\n"
          "                        with poll queues; a finding, never written)\n"
          "  --depths LIST         queue depths measured (default 1,32; at most 4)\n"
          "  --block-size SIZE     bytes per read (default 4K)\n"
          "  --rounds N            rounds, each candidate once per round (default 7; 3-32)\n"
          "  --runtime TIME        counted time per candidate and depth (default 1s)\n"
          "  --warmup TIME         reads before counting, per probe (default 200ms)\n"
          "  --range OFFSET:LEN    read only this byte range (default: the whole disk)\n"
          "  --hipri               polled reads (IORING_SETUP_IOPOLL); needs poll queues\n"
          "  --min-effect PCT      smallest gain acted on (default 5)\n"
          "  --alpha P             the sign test's level (default 0.01)\n"
          "  --busy PCT            refuse a disk busier than this (default 5)\n"
          "  --force               measure a busy disk anyway\n"
          "  --write               write the proposed drop-in\n"
          "  --plot DIR            write DIR/DISK.svg: the candidates' latency distributions\n"
          "  --json, --root DIR, --config DIR\n",
          "  iotunectl tune nvme0n1\n"
          "  iotunectl tune nvme0n1 --knobs scheduler,nr_requests --rounds 7 --plot /tmp/tune\n"
          "  iotunectl tune nvme0n1 --write && systemctl reload iotuned\n" },
        { "diagnose", cli_diagnose, "diagnose [DEVICE...] [--interval TIME] [--all]",
          "What the files iotuned reads anyway say about each disk, and who else writes\n"
          "its knobs, read-only (nothing is written, no hold is taken). Two samples\n"
          "--interval apart of /sys/block/DISK/stat (and inflight), /proc/interrupts and\n"
          "the blk-mq debugfs counters give:\n"
          "  software-queue    a deep queue and a high await while the device is not the\n"
          "                    limit, with a scheduler (mq-deadline on NVMe): requests\n"
          "                    wait in software\n"
          "  irq-off-node, hot-cpu, silent-queue, queue-map-one-cpu, few-queues\n"
          "                    interrupt balance and queue maps\n"
          "  poll-queues-unused  poll queues no I/O reaches\n"
          "and, once per NVMe controller, the SMART / health log and APST (through\n"
          "libnvme): critical warnings, temperature against its thresholds, time\n"
          "throttled, media errors, the worst APST exit latency. Other writers: udev\n"
          "rules in /etc, /run, /usr/local/lib, /usr/lib and /lib udev/rules.d that\n"
          "assign a queue attribute (file:line, and whether the rule's match keys match\n"
          "the disk), the active TuneD profile's [disk] and [sysfs] entries, irqbalance,\n"
          "another iotuned; one that writes again (on change events) a value the\n"
          "profile does not want is a fight (fights-iotuned).\n"
          "With iotuned running, its drift counts and conflicts per knob are added.\n"
          "Exit 0: nothing above a notice, 1: warnings, 2: a critical finding (the drive\n"
          "itself), 4: no such disk.\n",
          "  --interval TIME       time between the two samples (default 1s; 100ms-60s)\n"
          "  --all                 also list the info findings: the numbers measured\n"
          "  --json, --root DIR, --config DIR\n",
          "  iotunectl diagnose\n"
          "  iotunectl diagnose nvme0n1 --interval 5s --all\n"
          "  iotunectl diagnose --json | jq '.devices[].findings[] | select(.severity != \"info\")'\n" },
};

static const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

static void verb_help(const Verb *v) {
        printf("Usage: iotunectl [OPTIONS] %s\n\n%s\nOptions for %s:\n%s\nExamples:\n%s\n"
               "All commands and options: iotunectl --help; the manual: man iotunectl\n",
               v->usage, v->text, v->name, v->options, v->examples);
}

enum {
        ARG_VERSION = 0x100,
        ARG_JSON,
        ARG_ROOT,
        ARG_CONFIG,
        ARG_NO_PAGER,
        ARG_KNOBS,
        ARG_DEPTHS,
        ARG_BLOCK_SIZE,
        ARG_ROUNDS,
        ARG_RUNTIME,
        ARG_WARMUP,
        ARG_RANGE,
        ARG_HIPRI,
        ARG_MIN_EFFECT,
        ARG_ALPHA,
        ARG_BUSY,
        ARG_FORCE,
        ARG_WRITE,
        ARG_PLOT,
        ARG_INTERVAL,
        ARG_AS,
};

/* tune's options, checked by cli_tune(), which names the bad one: whether `c` is one. */
static bool parse_tune_option(int c, const char *arg, TuneArgs *t) {
        switch (c) {
        case ARG_KNOBS:
                t->knobs = arg;
                break;
        case ARG_DEPTHS:
                t->depths = arg;
                break;
        case ARG_BLOCK_SIZE:
                t->block_size = arg;
                break;
        case ARG_ROUNDS:
                t->rounds = arg;
                break;
        case ARG_RUNTIME:
                t->runtime = arg;
                break;
        case ARG_WARMUP:
                t->warmup = arg;
                break;
        case ARG_RANGE:
                t->range = arg;
                break;
        case ARG_HIPRI:
                t->hipri = true;
                break;
        case ARG_MIN_EFFECT:
                t->min_effect = arg;
                break;
        case ARG_ALPHA:
                t->alpha = arg;
                break;
        case ARG_BUSY:
                t->busy = arg;
                break;
        case ARG_FORCE:
                t->force = true;
                break;
        case ARG_WRITE:
                t->write = true;
                break;
        case ARG_PLOT:
                t->plot = arg;
                break;
        default:
                return false;
        }
        return true;
}

/* The options into `cli`; -h/--help sets *want_help (acted on after, as `iotunectl plan --help`
 * is plan's help). Returns 1 to go on, 0 to exit with EXIT_OK (--version), -EINVAL on a usage
 * error (logged). */
static int parse_argv(int argc, char *argv[], Cli *cli, bool *want_help) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "json", no_argument, NULL, ARG_JSON },
                { "all", no_argument, NULL, 'a' },
                { "quiet", no_argument, NULL, 'q' },
                { "verbose", no_argument, NULL, 'v' },
                { "root", required_argument, NULL, ARG_ROOT },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "knobs", required_argument, NULL, ARG_KNOBS },
                { "depths", required_argument, NULL, ARG_DEPTHS },
                { "block-size", required_argument, NULL, ARG_BLOCK_SIZE },
                { "rounds", required_argument, NULL, ARG_ROUNDS },
                { "runtime", required_argument, NULL, ARG_RUNTIME },
                { "warmup", required_argument, NULL, ARG_WARMUP },
                { "range", required_argument, NULL, ARG_RANGE },
                { "hipri", no_argument, NULL, ARG_HIPRI },
                { "min-effect", required_argument, NULL, ARG_MIN_EFFECT },
                { "alpha", required_argument, NULL, ARG_ALPHA },
                { "busy", required_argument, NULL, ARG_BUSY },
                { "force", no_argument, NULL, ARG_FORCE },
                { "write", no_argument, NULL, ARG_WRITE },
                { "plot", required_argument, NULL, ARG_PLOT },
                { "interval", required_argument, NULL, ARG_INTERVAL },
                { "as", required_argument, NULL, ARG_AS },
                {},
        };
        int c;

        /* getopt's own messages would name argv[0] ("build/src/iotunectl: ..."):
         * ours name the program. */
        opterr = 0;
        /* getopt permutes argv, so options may come before or after the command. */
        while ((c = getopt_long(argc, argv, ":haqvV", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        *want_help = true;
                        break;
                case 'V':
                        printf("iotunectl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_NO_PAGER:
                        break;
                case ARG_JSON:
                        cli->json = true;
                        break;
                case 'a':
                        cli->all = true;
                        break;
                case 'q':
                        cli->quiet = true;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_ROOT:
                        cli->root = optarg;
                        break;
                case ARG_CONFIG:
                        cli->config_dir = optarg;
                        break;
                case ARG_INTERVAL:
                        cli->interval = optarg;
                        break;
                case ARG_AS:
                        cli->as = optarg;
                        break;
                case ':':
                        log_error("Option '%s' needs an argument. Try 'iotunectl --help'.", esc(argv[optind - 1]));
                        return -EINVAL;
                default:
                        if (parse_tune_option(c, optarg, &cli->tune))
                                break;
                        if (optopt)
                                log_error("Unknown option '-%c'. Try 'iotunectl --help'.", optopt);
                        else
                                log_error("Unknown option '%s'. Try 'iotunectl --help'.", esc(argv[optind - 1]));
                        return -EINVAL;
                }
        return 1;
}

/* `iotunectl --help [COMMAND]`, `iotunectl help [COMMAND]`: NULL for the help of all. */
static int show_help(const char *verb) {
        const Verb *v = verb ? verb_find(verb) : NULL;

        if (verb && !v) {
                log_error("Unknown command '%s'. Try 'iotunectl --help'.", esc(verb));
                return EXIT_USAGE;
        }
        if (v)
                verb_help(v);
        else
                help();
        return EXIT_OK;
}

/* The options of one command given with another: -EINVAL (logged), else 0. */
static int check_verb_options(const Cli *cli, const char *verb) {
        if (!streq(verb, "tune") && cli_tune_args_given(&cli->tune)) {
                log_error("The options --knobs, --depths, --block-size, --rounds, --runtime, --warmup, --range, "
                          "--hipri, --min-effect, --alpha, --busy, --force, --write and --plot belong to 'tune'.");
                return -EINVAL;
        }
        if (!streq(verb, "diagnose") && cli->interval) {
                log_error("The option --interval belongs to 'diagnose'.");
                return -EINVAL;
        }
        if (!streq(verb, "check-config") && cli->as) {
                log_error("The option --as belongs to 'check-config'.");
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        Cli cli = { .root = "/" };
        const Verb *v;
        const char *verb;
        bool want_help = false;
        char **args;
        int r, ex;

        log_set_program_name("iotunectl");
        r = parse_argv(argc, argv, &cli, &want_help);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_OK;

        if (optind < argc && streq(argv[optind], "help")) {
                /* iotunectl help [COMMAND] */
                want_help = true;
                optind++;
        }
        if (want_help)
                return show_help(optind < argc ? argv[optind] : NULL);

        verb = optind < argc ? argv[optind] : "plan";
        args = optind < argc ? argv + optind + 1 : argv + argc;

        if (check_verb_options(&cli, verb) < 0)
                return EXIT_USAGE;
        if (cli_init(&cli) < 0)
                return EXIT_FAILED;

        v = verb_find(verb);
        if (v)
                ex = v->run(&cli, args);
        else {
                log_error("Unknown command '%s'. Try 'iotunectl --help'.", esc(verb));
                ex = EXIT_USAGE;
        }

        cli_done(&cli);
        return ex;
}
