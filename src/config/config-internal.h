/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the configuration loader share (config.h is the public face).
 * They call one way: config.c (the loader) -> main-file.c -> rule.c ->
 * config-values.c, config.c -> profile.c -> config-values.c and config.c ->
 * conf-files.c; config-paths.c (the search path) calls none of them. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "yaml-node.h"

#define MAIN_CONFIG "iotuned.yaml"
#define DROPIN_DIR "iotuned.yaml.d"
#define PROFILE_DIR "profiles"
#define DEFAULT_PROFILE "mixed"
/* Drift check interval: short enough that irqbalance's 10 s rebalance or a udev
 * rule's revert is corrected well within one of its own periods. */
#define DEFAULT_REASSERT_USEC (5ULL * 1000000ULL)
#define MIN_REASSERT_USEC (100ULL * 1000ULL)
#define MAX_REASSERT_USEC (3600ULL * 1000000ULL)

/* One main-config or drop-in file. Rules land in `*rules` in file order; `*reset`
 * says the file set `rules: []`, clearing rules from files read before it. */
typedef struct FileConfig {
        char *default_profile;
        Mark default_profile_mark;
        Rule *rules;
        size_t n_rules;
        bool rules_set;
        int discover[_DISCOVERY_MAX]; /* -1 unset */
        uint64_t reassert_usec;       /* 0 unset */
        int restore_on_stop;          /* -1 unset */
        char *metrics_textfile;       /* NULL unset, "" = off */
} FileConfig;

typedef struct ConfFile {
        char *name;        /* basename, the override key */
        char *path;        /* shown in marks; BUILTIN_PREFIX/... for embedded */
        const char *text;  /* embedded contents, or NULL to read `path` */
        bool masked;
} ConfFile;

typedef struct ConfFiles {
        ConfFile *items;
        size_t n;
} ConfFiles;

/* config-values.c */
void value_done(Value *v);
/* 0 when n is of that kind (a non-empty scalar), else -EINVAL with a diagnostic at
 * n (-ENOMEM when not even that could be recorded). */
int node_expect_kind(const YNode *n, YNodeKind kind, const char *what, Diag *d);
int node_expect_string(const YNode *n, const char *what, Diag *d);
void node_unknown_key(const YPair *p, const char *where, const char *const *keys, size_t n_keys, Diag *d);
bool profile_name_valid(const char *s);
int node_parse_profile_name(const YNode *n, const char *what, char **ret, Diag *d);
int node_parse_bool(const YNode *n, const char *what, bool *ret, Diag *d);
int values_parse_sections(const YNode *pair_value, const char *key, Value values[_KNOB_MAX], IrqPolicy *irq,
        Value *nvme_apply, Diag *d, bool *handled);
/* profile.c */
Profile *profile_free(Profile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Profile *, profile_free);
int profile_cmp_name(const void *a, const void *b);
/* root: NULL for an empty document (a profile that sets nothing). */
int profile_parse(const YNode *root, const char *path, const char *basename_name, Profile **ret, Diag *d);
int profiles_check_extends(Config *c, Diag *d);
int profile_resolve(Config *c, Profile *p);
/* rule.c */
void rule_done(Rule *r);
int rule_parse(const YNode *n, Rule *rule, Diag *d);
/* main-file.c */
void file_config_done(FileConfig *f);
/* root: NULL for an empty document (no settings, no rules). */
int main_file_parse(const YNode *root, FileConfig *fc, Diag *d);
int main_file_merge(Config *c, FileConfig *fc, Rule **all_rules, size_t *n_all);
/* conf-files.c */
void conf_files_done(ConfFiles *f);
/* Either the *.yaml files of `subdir` or the one file `single`; the other is NULL. */
int conf_files_collect(const ConfigPaths *paths, const char *subdir, const char *single, ConfFiles *out,
        char ***checked, Diag *d);
int conf_file_parse(const ConfFile *f, YNode **ret, Diag *d);
