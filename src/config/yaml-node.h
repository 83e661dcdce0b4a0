/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "diag.h"

/* A YAML document as a small tree that keeps every node's position, built from
 * libyaml's event stream (whose start_mark carries line and column). Typed
 * validation happens on this tree, so every error can name file:line:column. */
typedef enum YNodeKind {
        YNODE_SCALAR,
        YNODE_MAPPING,
        YNODE_SEQUENCE,
} YNodeKind;

typedef struct YNode YNode;

/* Limits on what one file may contain. The daemon loads its configuration under a
 * 30 s watchdog; each limit keeps a hostile or broken file from costing more than a
 * few milliseconds, and each is far beyond what a real configuration needs. */
#define YNODE_MAX_FILE_SIZE (1024u * 1024u) /* bytes per file */
#define YNODE_MAX_DEPTH 64                  /* nested mappings and lists */
#define YNODE_MAX_CHILDREN 4096             /* keys in one mapping, items in one list */

typedef struct YPair {
        YNode *key;
        YNode *value;
} YPair;

struct YNode {
        YNodeKind kind;
        Mark mark;
        char *scalar;   /* YNODE_SCALAR */
        bool quoted;    /* a quoted scalar is always a string ("0" stays a string) */
        bool placeholder; /* stands in for a rejected non-scalar key */
        YPair *pairs;   /* YNODE_MAPPING, in document order */
        size_t n_pairs;
        YNode **items;  /* YNODE_SEQUENCE */
        size_t n_items;
};

YNode *ynode_free(YNode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(YNode *, ynode_free);

/* Parse one document. An empty document yields *ret = NULL and 0. Syntax and
 * encoding errors, duplicate keys, aliases, tags, non-scalar keys and the limits
 * above are added to `diag` and make the call return -EINVAL. `name` is the file
 * name shown in marks. `text` need not be NUL-terminated and may contain NULs
 * (which are errors, at their position). */
int ynode_parse_string(const char *text, size_t len, const char *name, YNode **ret, Diag *diag);

/* Read a file (without ever blocking: a FIFO, socket or device is "not a regular
 * file"; at most YNODE_MAX_FILE_SIZE bytes) and parse it. The file must pass
 * ynode_check_owner() (checked on the file actually read, a symbolic link's
 * target). Every failure is in `diag`. */
int ynode_parse_file(const char *path, YNode **ret, Diag *diag);

/* The ownership rule for configuration files and the directories holding them:
 * owned by root (or by the user running the program, so that an unprivileged
 * `iotunectl check-config --config DIR` works on one's own files) and not
 * writable by group or others. Adds "PATH: ..., refusing it" to `diag` and
 * returns -EPERM otherwise. */
int ynode_check_owner(const char *path, const struct stat *st, Diag *diag);

const char *ynode_kind_name(YNodeKind k);
/* Lookup of a key in a mapping node, NULL if absent. */
YNode *ynode_get(const YNode *map, const char *key);
/* "null", "~" or empty plain scalar */
bool ynode_is_null(const YNode *n);
