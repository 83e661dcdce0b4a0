/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"
#include "irq-placement.h"
#include "knob.h"

/* One knob value in a profile or rule, with where it was written. */
typedef struct Value {
        char *value; /* canonical (knob->parse); NULL = not set */
        Mark origin;
} Value;

typedef struct Profile {
        char *name;
        char *description;
        char *path;          /* file it was read from ("<builtin>/profiles/x.yaml" for embedded) */
        char *extends;
        Mark extends_mark;
        Value knobs[_KNOB_MAX];     /* as written in this file */
        Value resolved[_KNOB_MAX];  /* after `extends:`; origins point at the defining file */
        IrqPolicy irq;              /* the `irq:` section as written */
        IrqPolicy irq_resolved;     /* after `extends:` */
        Value nvme_apply;           /* `nvme: { apply: reboot|rebind }` as written; NULL = reboot */
        Value nvme_apply_resolved;
        bool resolved_done;
} Profile;

typedef enum Tristate {
        TRI_UNSET = -1,
        TRI_FALSE = 0,
        TRI_TRUE = 1,
} Tristate;

typedef struct UdevMatch {
        char *key;
        char *glob;
} UdevMatch;

typedef struct Match {
        char *kernel;     /* globs (fnmatch) */
        char *transport;
        char *model;
        char *serial;
        char *firmware;
        char *wwn;
        char *nqn;        /* NVMe subsystem NQN */
        Tristate rotational;
        bool has_numa_node;
        int numa_node;
        bool has_size;
        uint64_t size_min, size_max; /* bytes, inclusive */
        UdevMatch *udev;
        size_t n_udev;
} Match;

typedef struct Rule {
        char *name;       /* `name:` or "FILE:LINE" */
        Mark mark;
        Match match;
        char *profile;    /* NULL when exclude */
        Mark profile_mark;
        bool exclude;
        Value set[_KNOB_MAX];  /* per-rule overrides (`set: { queue: {...} }`) */
        IrqPolicy set_irq;     /* `set: { irq: {...} }` */
        Value set_nvme_apply;  /* `set: { nvme: { apply: ... } }` */
} Rule;

typedef enum DiscoveryClass {
        DISCOVERY_LOOP,
        DISCOVERY_DM,
        DISCOVERY_MD,
        DISCOVERY_ZRAM,
        _DISCOVERY_MAX,
} DiscoveryClass;

typedef struct Config {
        char *default_profile;
        Mark default_profile_mark;
        Rule *rules;                 /* evaluation order: first match wins */
        size_t n_rules;
        Profile **profiles;          /* in file name order */
        size_t n_profiles;
        Profile **profiles_by_name;  /* the same, sorted by name for lookups; NULL: search `profiles` */
        bool discover[_DISCOVERY_MAX];
        uint64_t reassert_usec;      /* daemon drift check interval */
        bool restore_on_stop;        /* daemon: put originals back on SIGTERM */
        char *metrics_textfile;      /* daemon: node_exporter textfile, NULL = off */
        char **files;                /* every file that contributed, in load order */
        char **masked;               /* files masked by a /dev/null symlink */
} Config;

/* Limits beyond the per-file ones of yaml-node.h (see iotuned.yaml(5), LIMITS). */
#define CONFIG_MAX_FILES 4096        /* drop-ins; profiles (each over all directories) */
#define CONFIG_MAX_RULES 4096        /* rules in the merged configuration */
#define CONFIG_MAX_EXTENDS_CHAIN 32  /* profiles in one `extends:` chain, itself included */

/* Where configuration is searched, most important first (systemd's convention:
 * /etc overrides /run overrides /usr/lib). The embedded copy of the shipped
 * conf/ is always the last, least important layer. */
typedef struct ConfigPaths {
        char **dirs;
        bool builtin;   /* include the embedded defaults */
        /* check-config --as: the file read as if it were installed in candidate_dir
         * as candidate_name (config_paths_set_candidate()); all NULL otherwise. */
        char *candidate_dir;
        char *candidate_name;
        char *candidate_file;
} ConfigPaths;

extern const char *const discovery_class_names[_DISCOVERY_MAX];

void config_paths_done(ConfigPaths *p);
/* root: as the caller was given it (NULL, "" or "/" for the real root, or a test
 * tree); it is normalised here, so callers pass it on unchanged. config_dir: if
 * set (may be NULL), the only directory searched. */
int config_paths_default(const char *root, const char *config_dir, ConfigPaths *ret);
/* Read `file` as if it were installed at `path` (under `root`, as for
 * config_paths_default()): the main file, a drop-in or a profile of one of p's
 * directories. It takes the place of a file of that name there, or is added
 * when there is none; its diagnostics name `file`. Nothing at `path` is read.
 * -EINVAL when `path` is not such a place, with the reason in *ret_why. */
int config_paths_set_candidate(ConfigPaths *p, const char *root, const char *path, const char *file,
                               const char **ret_why);

Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Load, merge and validate everything. On any error, every problem is in `diag`,
 * *ret is untouched and -EINVAL is returned: nothing half-loaded escapes. */
int config_load(const ConfigPaths *paths, Config **ret, Diag *diag);

const Profile *config_find_profile(const Config *c, const char *name);

/* Parse one profile value for `knob` from a string as a profile file would; used by
 * the YAML loader and by tests. -EINVAL/-ERANGE with the knob's `expected` text. */
int config_parse_knob_value(const Knob *k, const char *value, char **ret);

/* For tests: a single file as a main config or a profile, no merging. */
int config_parse_main_file(const char *path, Config *into, Diag *diag);
