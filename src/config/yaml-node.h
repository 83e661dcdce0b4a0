/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

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

typedef struct YPair {
        YNode *key;
        YNode *value;
} YPair;

struct YNode {
        YNodeKind kind;
        Mark mark;
        char *scalar;   /* YNODE_SCALAR */
        bool quoted;    /* a quoted scalar is always a string ("0" stays a string) */
        YPair *pairs;   /* YNODE_MAPPING, in document order */
        size_t n_pairs;
        YNode **items;  /* YNODE_SEQUENCE */
        size_t n_items;
};

YNode *ynode_free(YNode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(YNode *, ynode_free);

/* Parse one document. An empty document yields *ret = NULL and 0. Syntax errors,
 * duplicate keys, aliases and non-scalar keys are added to `diag` and make the
 * call return -EINVAL. `name` is the file name shown in marks. */
int ynode_parse_string(const char *text, size_t len, const char *name, YNode **ret, Diag *diag);
int ynode_parse_file(const char *path, YNode **ret, Diag *diag);

const char *ynode_kind_name(YNodeKind k);
/* Lookup of a key in a mapping node, NULL if absent. */
YNode *ynode_get(const YNode *map, const char *key);
/* "null", "~" or empty plain scalar */
bool ynode_is_null(const YNode *n);
