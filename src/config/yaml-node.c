/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "fileio.h"

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
        assert(key);

        if (!map || map->kind != YNODE_MAPPING)
                return NULL;
        for (size_t i = 0; i < map->n_pairs; i++)
                if (streq(map->pairs[i].key->scalar, key))
                        return map->pairs[i].value;
        return NULL;
}

bool ynode_is_null(const YNode *n) {
        assert(n);

        return n->kind == YNODE_SCALAR && !n->quoted &&
               (isempty(n->scalar) || streq(n->scalar, "~") || streq(n->scalar, "null") ||
                streq(n->scalar, "Null") || streq(n->scalar, "NULL"));
}

static YNode *ynode_new(YNodeKind kind, const char *file, const yaml_mark_t *m) {
        YNode *n;

        assert(file);
        assert(m);

        n = calloc(1, sizeof(YNode));
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

/* Keys of one open mapping, for the duplicate check: open addressing on the key
 * strings, so a mapping of N keys costs O(N), not O(N^2). */
typedef struct KeySet {
        YNode **slots;
        size_t n_slots, n;
} KeySet;

static size_t key_hash(const char *s) {
        size_t h = 14695981039346656037ULL; /* FNV-1a */

        assert(s);

        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return h;
}

/* Returns the key already present with the same text, or NULL after adding `k`. */
static int key_set_add(KeySet *set, YNode *k, YNode **ret_dup) {
        size_t i;

        assert(set);
        assert(k);
        assert(ret_dup);

        if ((set->n + 1) * 2 > set->n_slots) {
                size_t ns = set->n_slots ? set->n_slots * 2 : 16;
                YNode **slots = calloc(ns, sizeof(YNode *));
                if (!slots)
                        return -ENOMEM;
                for (size_t j = 0; j < set->n_slots; j++)
                        if (set->slots[j]) {
                                for (i = key_hash(set->slots[j]->scalar) & (ns - 1); slots[i]; i = (i + 1) & (ns - 1))
                                        ;
                                slots[i] = set->slots[j];
                        }
                free(set->slots);
                set->slots = slots;
                set->n_slots = ns;
        }
        for (i = key_hash(k->scalar) & (set->n_slots - 1); set->slots[i]; i = (i + 1) & (set->n_slots - 1))
                if (streq(set->slots[i]->scalar, k->scalar)) {
                        *ret_dup = set->slots[i];
                        return 0;
                }
        set->slots[i] = k;
        set->n++;
        *ret_dup = NULL;
        return 0;
}

/* Attach a finished node to its parent (top of stack). For mappings, a pending key
 * waits in `key` until its value arrives. */
typedef struct Frame {
        YNode *node;
        YNode *key; /* mapping only: key waiting for its value */
        size_t alloc;
        KeySet keys;
} Frame;

typedef struct Builder {
        Frame *stack;
        size_t depth, alloc;
        YNode *root;
        Diag *diag;
        int error;
        bool stop; /* a limit was hit: the rest of the document is not read */
} Builder;

static int grow(void **p, size_t *alloc, size_t n, size_t size) {
        void *np;
        size_t a;

        assert(p);
        assert(alloc);

        if (n < *alloc)
                return 0;
        a = *alloc ? *alloc * 2 : 4;
        np = realloc(*p, a * size);
        if (!np)
                return -ENOMEM;
        *p = np;
        *alloc = a;
        return 0;
}

static int builder_attach(Builder *b, YNode *n) {
        Frame *top;
        YNode *parent;

        assert(b);
        assert(n);

        if (b->depth == 0) {
                b->root = n;
                return 0;
        }
        top = &b->stack[b->depth - 1];
        parent = top->node;
        if (parent->kind == YNODE_SEQUENCE) {
                if (parent->n_items >= YNODE_MAX_CHILDREN) {
                        diag_add(b->diag, &n->mark, "more than %u items in one list; refusing the file",
                                 YNODE_MAX_CHILDREN);
                        ynode_free(n);
                        b->error = -EINVAL;
                        b->stop = true;
                        return 0;
                }
                if (grow((void **) &parent->items, &top->alloc, parent->n_items, sizeof(YNode *)) < 0) {
                        ynode_free(n);
                        return -ENOMEM;
                }
                parent->items[parent->n_items++] = n;
                return 0;
        }

        /* mapping */
        if (!top->key) {
                YNode *dup;
                int r;

                if (parent->n_pairs >= YNODE_MAX_CHILDREN) {
                        diag_add(b->diag, &n->mark, "more than %u keys in one mapping; refusing the file",
                                 YNODE_MAX_CHILDREN);
                        ynode_free(n);
                        b->error = -EINVAL;
                        b->stop = true;
                        return 0;
                }
                if (n->kind != YNODE_SCALAR) {
                        diag_add(b->diag, &n->mark, "a mapping key must be a plain name, not %s",
                                 ynode_kind_name(n->kind));
                        b->error = -EINVAL;
                        /* Keep the structure balanced: a placeholder key, at the
                         * rejected key's place, that takes no part in the
                         * duplicate check (it was reported already). */
                        top->key = calloc(1, sizeof(YNode));
                        if (!top->key || mark_copy(&top->key->mark, &n->mark) < 0) {
                                ynode_free(n);
                                return -ENOMEM;
                        }
                        ynode_free(n);
                        top->key->kind = YNODE_SCALAR;
                        top->key->placeholder = true;
                        top->key->scalar = strdup("");
                        return top->key->scalar ? 0 : -ENOMEM;
                }
                r = key_set_add(&top->keys, n, &dup);
                if (r < 0) {
                        ynode_free(n);
                        return r;
                }
                if (dup) {
                        diag_add(b->diag, &n->mark, "duplicate key '%s' (first defined at line %u, column %u)",
                                 n->scalar, dup->mark.line, dup->mark.column);
                        b->error = -EINVAL;
                }
                top->key = n;
                return 0;
        }
        if (grow((void **) &parent->pairs, &top->alloc, parent->n_pairs, sizeof(YPair)) < 0) {
                ynode_free(n);
                return -ENOMEM;
        }
        parent->pairs[parent->n_pairs].key = TAKE_PTR(top->key);
        parent->pairs[parent->n_pairs].value = n;
        parent->n_pairs++;
        return 0;
}

static int builder_push(Builder *b, YNode *n) {
        assert(b);
        assert(n);

        /* Counted on the event stream, so a deeply nested document stops here, after
         * a few dozen events, before libyaml's scanner (whose simple-key stack makes
         * each token cost O(depth)) has gone deep at all. */
        if (b->depth >= YNODE_MAX_DEPTH) {
                diag_add(b->diag, &n->mark, "nesting deeper than %u levels; refusing the file", YNODE_MAX_DEPTH);
                ynode_free(n);
                b->error = -EINVAL;
                b->stop = true;
                return 0;
        }
        if (grow((void **) &b->stack, &b->alloc, b->depth, sizeof(Frame)) < 0) {
                ynode_free(n);
                return -ENOMEM;
        }
        b->stack[b->depth++] = (Frame) { .node = n };
        return 0;
}

static void frame_done(Frame *f) {
        assert(f);

        free(f->keys.slots);
        f->keys = (KeySet) {};
}

static int builder_pop(Builder *b) {
        Frame f;

        assert(b);

        f = b->stack[--b->depth];
        ynode_free(f.key); /* only set if the document was cut short */
        frame_done(&f);
        return builder_attach(b, f.node);
}

static void builder_done(Builder *b) {
        assert(b);

        while (b->depth > 0) {
                Frame f = b->stack[--b->depth];
                ynode_free(f.key);
                ynode_free(f.node);
                frame_done(&f);
        }
        free(b->stack);
        ynode_free(b->root);
}

/* Line and column (1-based, columns in characters as libyaml counts them) of a byte
 * offset: libyaml's reader errors (bad UTF-8, control characters, NUL) carry only
 * the offset, their problem_mark is never set. */
static void offset_to_mark(const char *text, size_t len, size_t offset, Mark *m) {
        unsigned line = 1, column = 1;

        assert(text || len == 0);
        assert(m);

        for (size_t i = 0; i < offset && i < len; i++) {
                unsigned char c = (unsigned char) text[i];
                if (c == '\n' || (c == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
                        line++;
                        column = 1;
                } else if ((c & 0xC0) != 0x80 && c != '\r')
                        column++;
        }
        m->line = line;
        m->column = column;
}

/* "!!str" for libyaml's resolved "tag:yaml.org,2002:str", as the file spells it. */
static int tag_error(Diag *diag, const char *name, const yaml_mark_t *ym, const char *tag) {
        static const char yaml_org[] = "tag:yaml.org,2002:";
        Mark m;
        bool std;

        assert(diag);
        assert(name);
        assert(ym);
        assert(tag);

        m = (Mark) { .file = (char *) name, .line = (unsigned) ym->line + 1, .column = (unsigned) ym->column + 1 };
        std = str_startswith(tag, yaml_org);
        return diag_add(diag, &m, "YAML tags (%s%s) are not supported; remove the tag and write the value plainly",
                        std ? "!!" : "", std ? tag + strlen(yaml_org) : tag);
}

int ynode_parse_string(const char *text, size_t len, const char *name, YNode **ret, Diag *diag) {
        yaml_parser_t parser;
        Builder b = { .diag = diag };
        bool done = false, seen_document = false;
        int r = 0;

        assert(text || len == 0);
        assert(name);
        assert(ret);
        assert(diag);

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *) text, len);

        while (!done && !b.stop) {
                yaml_event_t ev;
                YNode *n = NULL;
                const unsigned char *tag = NULL;

                if (!yaml_parser_parse(&parser, &ev)) {
                        Mark m = { .file = (char *) name, .line = (unsigned) parser.problem_mark.line + 1,
                                   .column = (unsigned) parser.problem_mark.column + 1 };
                        if (parser.error == YAML_READER_ERROR) {
                                offset_to_mark(text, len, parser.problem_offset, &m);
                                if (parser.problem_value >= 0)
                                        r = diag_add(diag, &m, "invalid character: %s (0x%02X)",
                                                     parser.problem ?: "unknown", (unsigned) parser.problem_value);
                                else
                                        r = diag_add(diag, &m, "invalid character: %s", parser.problem ?: "unknown");
                        } else if (parser.context)
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
                        tag = ev.data.scalar.tag;
                        if (tag) {
                                /* A tag changes a value's type in ways this loader does not
                                 * model ("!!str 1" vs 1); refuse rather than ignore it. */
                                r = tag_error(diag, name, &ev.start_mark, (const char *) tag);
                                done = true;
                                break;
                        }
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
                        tag = ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.tag
                                                                   : ev.data.mapping_start.tag;
                        if (tag) {
                                r = tag_error(diag, name, &ev.start_mark, (const char *) tag);
                                done = true;
                                break;
                        }
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

int ynode_check_owner(const char *path, const struct stat *st, Diag *diag) {
        mode_t mode;

        assert(path);
        assert(st);
        assert(diag);

        mode = st->st_mode & 07777;
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return diag_add_file(diag, path, "owned by uid %u, not root, refusing it (mode %04o)",
                                     (unsigned) st->st_uid, (unsigned) mode) == -ENOMEM ? -ENOMEM : -EPERM;
        if (mode & (S_IWGRP | S_IWOTH))
                return diag_add_file(diag, path, "writable by %s (mode %04o), refusing it",
                                     (mode & S_IWGRP) && (mode & S_IWOTH) ? "group/others"
                                     : mode & S_IWGRP                      ? "group"
                                                                           : "others",
                                     (unsigned) mode) == -ENOMEM ? -ENOMEM : -EPERM;
        return 0;
}

/* Not read_full_file(): a NUL inside a file must be reported at its place, not
 * cut the document short (read_fd_full() keeps it, with the length), and the
 * ownership check belongs to the descriptor actually read (no window between a
 * stat(2) and the open(2)). The open follows read_full_file()'s rules:
 * O_NONBLOCK (a FIFO never blocks the open), a regular file only, bounded size. */
static int read_config_file(const char *path, char **ret, size_t *ret_len, Diag *diag) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        assert(path);
        assert(ret);
        assert(ret_len);
        assert(diag);

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                diag_add_file(diag, path, "cannot open: %s", file_strerror(r));
                return r;
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                diag_add_file(diag, path, "cannot stat: %s", file_strerror(r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                r = S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
                diag_add_file(diag, path, "%s", file_strerror(r));
                return r;
        }
        r = ynode_check_owner(path, &st, diag);
        if (r < 0)
                return r;
        r = read_fd_full(fd, YNODE_MAX_FILE_SIZE, ret, ret_len);
        if (r == -EFBIG)
                diag_add_file(diag, path,
                              "file is larger than %u KiB (1 MiB), the limit for a configuration file; refusing it",
                              YNODE_MAX_FILE_SIZE / 1024);
        else if (r < 0 && r != -ENOMEM)
                diag_add_file(diag, path, "read error: %s", file_strerror(r));
        return r;
}

int ynode_parse_file(const char *path, YNode **ret, Diag *diag) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        assert(path);
        assert(ret);
        assert(diag);

        r = read_config_file(path, &buf, &len, diag);
        if (r < 0)
                return r;
        return ynode_parse_string(buf, len, path, ret, diag);
}
