/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>
#include <yaml.h>

#include "util.h"
#include "yaml-node.h"

YNode *ynode_free(YNode *n) {
        if (!n)
                return NULL;
        mark_done(&n->mark);
        free(n->scalar);
        for (size_t i = 0; i < n->n_pairs; i++) {
                ynode_free(n->pairs[i].key);
                ynode_free(n->pairs[i].value);
        }
        free(n->pairs);
        for (size_t i = 0; i < n->n_items; i++)
                ynode_free(n->items[i]);
        free(n->items);
        free(n);
        return NULL;
}

const char *ynode_kind_name(YNodeKind k) {
        switch (k) {
        case YNODE_SCALAR:
                return "a scalar";
        case YNODE_MAPPING:
                return "a mapping";
        case YNODE_SEQUENCE:
                return "a list";
        }
        return "?";
}

YNode *ynode_get(const YNode *map, const char *key) {
        if (!map || map->kind != YNODE_MAPPING)
                return NULL;
        for (size_t i = 0; i < map->n_pairs; i++)
                if (streq(map->pairs[i].key->scalar, key))
                        return map->pairs[i].value;
        return NULL;
}

bool ynode_is_null(const YNode *n) {
        return n->kind == YNODE_SCALAR && !n->quoted &&
               (isempty(n->scalar) || streq(n->scalar, "~") || streq(n->scalar, "null") ||
                streq(n->scalar, "Null") || streq(n->scalar, "NULL"));
}

static YNode *ynode_new(YNodeKind kind, const char *file, const yaml_mark_t *m) {
        YNode *n = calloc(1, sizeof(YNode));
        if (!n)
                return NULL;
        n->kind = kind;
        n->mark.file = strdup(file);
        /* libyaml marks are 0-based; people count from 1. */
        n->mark.line = (unsigned) m->line + 1;
        n->mark.column = (unsigned) m->column + 1;
        if (!n->mark.file)
                return ynode_free(n);
        return n;
}

/* Attach a finished node to its parent (top of stack). For mappings, a pending key
 * waits in `key` until its value arrives. */
typedef struct Frame {
        YNode *node;
        YNode *key; /* mapping only: key waiting for its value */
} Frame;

typedef struct Builder {
        Frame *stack;
        size_t depth, alloc;
        YNode *root;
        Diag *diag;
        int error;
} Builder;

static int builder_attach(Builder *b, YNode *n) {
        Frame *top;

        if (b->depth == 0) {
                b->root = n;
                return 0;
        }
        top = &b->stack[b->depth - 1];
        if (top->node->kind == YNODE_SEQUENCE) {
                YNode **items = realloc(top->node->items, (top->node->n_items + 1) * sizeof(YNode *));
                if (!items) {
                        ynode_free(n);
                        return -ENOMEM;
                }
                top->node->items = items;
                items[top->node->n_items++] = n;
                return 0;
        }

        /* mapping */
        if (!top->key) {
                if (n->kind != YNODE_SCALAR) {
                        diag_add(b->diag, &n->mark, "a mapping key must be a plain name, not %s",
                                 ynode_kind_name(n->kind));
                        ynode_free(n);
                        b->error = -EINVAL;
                        /* Keep the structure balanced: use a placeholder key. */
                        top->key = calloc(1, sizeof(YNode));
                        if (!top->key)
                                return -ENOMEM;
                        top->key->kind = YNODE_SCALAR;
                        top->key->scalar = strdup("");
                        return top->key->scalar ? 0 : -ENOMEM;
                }
                for (size_t i = 0; i < top->node->n_pairs; i++)
                        if (streq(top->node->pairs[i].key->scalar, n->scalar)) {
                                const Mark *first = &top->node->pairs[i].key->mark;
                                diag_add(b->diag, &n->mark, "duplicate key '%s' (first defined at line %u, column %u)",
                                         n->scalar, first->line, first->column);
                                b->error = -EINVAL;
                                break;
                        }
                top->key = n;
                return 0;
        } else {
                YPair *pairs = realloc(top->node->pairs, (top->node->n_pairs + 1) * sizeof(YPair));
                if (!pairs) {
                        ynode_free(n);
                        return -ENOMEM;
                }
                top->node->pairs = pairs;
                pairs[top->node->n_pairs].key = TAKE_PTR(top->key);
                pairs[top->node->n_pairs].value = n;
                top->node->n_pairs++;
                return 0;
        }
}

static int builder_push(Builder *b, YNode *n) {
        if (b->depth == b->alloc) {
                size_t a = b->alloc ? b->alloc * 2 : 8;
                Frame *s = realloc(b->stack, a * sizeof(Frame));
                if (!s) {
                        ynode_free(n);
                        return -ENOMEM;
                }
                b->stack = s;
                b->alloc = a;
        }
        b->stack[b->depth++] = (Frame) { .node = n };
        return 0;
}

static int builder_pop(Builder *b) {
        Frame f = b->stack[--b->depth];
        ynode_free(f.key); /* only set if the document was cut short */
        return builder_attach(b, f.node);
}

static void builder_done(Builder *b) {
        while (b->depth > 0) {
                Frame f = b->stack[--b->depth];
                ynode_free(f.key);
                ynode_free(f.node);
        }
        free(b->stack);
        ynode_free(b->root);
}

int ynode_parse_string(const char *text, size_t len, const char *name, YNode **ret, Diag *diag) {
        yaml_parser_t parser;
        Builder b = { .diag = diag };
        bool done = false, seen_document = false;
        int r = 0;

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *) text, len);

        while (!done) {
                yaml_event_t ev;
                YNode *n = NULL;

                if (!yaml_parser_parse(&parser, &ev)) {
                        Mark m = { .file = (char *) name, .line = (unsigned) parser.problem_mark.line + 1,
                                   .column = (unsigned) parser.problem_mark.column + 1 };
                        if (parser.context)
                                r = diag_add(diag, &m, "YAML syntax error: %s (%s that starts at line %u, column %u)",
                                             parser.problem, parser.context,
                                             (unsigned) parser.context_mark.line + 1,
                                             (unsigned) parser.context_mark.column + 1);
                        else
                                r = diag_add(diag, &m, "YAML syntax error: %s", parser.problem ?: "unknown");
                        break;
                }

                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        if (seen_document) {
                                Mark m = { .file = (char *) name, .line = (unsigned) ev.start_mark.line + 1,
                                           .column = (unsigned) ev.start_mark.column + 1 };
                                r = diag_add(diag, &m, "only one YAML document per file is allowed");
                                done = true;
                        }
                        seen_document = true;
                        break;
                case YAML_ALIAS_EVENT: {
                        Mark m = { .file = (char *) name, .line = (unsigned) ev.start_mark.line + 1,
                                   .column = (unsigned) ev.start_mark.column + 1 };
                        /* Aliases would let one value come from two places; keep configs literal. */
                        r = diag_add(diag, &m, "YAML aliases (*%s) are not supported; write the value out",
                                     (const char *) ev.data.alias.anchor);
                        done = true;
                        break;
                }
                case YAML_SCALAR_EVENT:
                        n = ynode_new(YNODE_SCALAR, name, &ev.start_mark);
                        if (!n) {
                                r = -ENOMEM;
                                break;
                        }
                        n->scalar = strndup((const char *) ev.data.scalar.value, ev.data.scalar.length);
                        n->quoted = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
                        if (!n->scalar) {
                                ynode_free(n);
                                r = -ENOMEM;
                                break;
                        }
                        r = builder_attach(&b, n);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        n = ynode_new(ev.type == YAML_SEQUENCE_START_EVENT ? YNODE_SEQUENCE : YNODE_MAPPING, name,
                                      &ev.start_mark);
                        r = n ? builder_push(&b, n) : -ENOMEM;
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        r = builder_pop(&b);
                        break;
                default:
                        break;
                }
                yaml_event_delete(&ev);
                if (r < 0)
                        break;
        }
        yaml_parser_delete(&parser);

        if (r == 0 && b.error < 0)
                r = b.error;
        if (r < 0) {
                builder_done(&b);
                return r;
        }
        *ret = TAKE_PTR(b.root);
        builder_done(&b);
        return 0;
}

int ynode_parse_file(const char *path, YNode **ret, Diag *diag) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        f = fopen(path, "re");
        if (!f) {
                int r = negative_errno();
                diag_add_file(diag, path, "cannot open: %s", strerror(-r));
                return r;
        }
        for (;;) {
                size_t n;
                if (alloc - len < 4096) {
                        char *nb;
                        alloc = alloc ? alloc * 2 : 8192;
                        if (alloc > (16u << 20)) {
                                diag_add_file(diag, path, "file is larger than 16 MiB");
                                return -EFBIG;
                        }
                        nb = realloc(buf, alloc);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                n = fread(buf + len, 1, alloc - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f)) {
                                diag_add_file(diag, path, "read error");
                                return -EIO;
                        }
                        break;
                }
        }
        return ynode_parse_string(buf ?: "", len, path, ret, diag);
}
