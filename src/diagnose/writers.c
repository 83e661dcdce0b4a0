/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <signal.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "knob.h"
#include "macro.h"
#include "rootfs.h"
#include "util.h"
#include "writers.h"

/* Caps on what a hostile or broken tree can make us read. */
#define RULES_FILE_MAX (1024 * 1024) /* bytes per rules file or tuned.conf; larger ones are skipped */
#define RULES_FILES_MAX 4096         /* *.rules files over all directories */
#define LINE_MAX_LEN 16384           /* one logical line; udev's own limit (UDEV_LINE_SIZE) */
#define RULE_KEYS_MAX 64             /* keys in one udev rule */
#define TUNED_INCLUDE_DEPTH 8        /* include= nesting, against loops */
#define TUNED_PROFILES_MAX 8         /* names in active_profile */
#define TUNED_LOADS_MAX 32           /* tuned.conf files read per name in active_profile (include= fans out) */
#define TUNED_OPTS_MAX 1024          /* options kept per section; more are ignored (linear lookups) */
#define RULE_GOTOS_MAX 256           /* GOTOs and LABELs per rules file looked at for the skip note */
#define FILE_WRITERS_MAX 256         /* writers kept per rules file */
#define PROC_ENTRIES_MAX 65536       /* /proc entries looked at */
#define PARENT_DEPTH_MAX 32          /* sysfs parents walked for ATTRS/KERNELS/... */

/* udev's rule directories in precedence order (systemd: src/udev/udev-rules.c
 * RULES_DIRS). /lib is /usr/lib on usr-merged systems; base-name precedence makes
 * the same file seen twice count once. */
static const char *const rules_dirs[] = {
        "/etc/udev/rules.d",     "/run/udev/rules.d", "/usr/local/lib/udev/rules.d",
        "/usr/lib/udev/rules.d", "/lib/udev/rules.d",
};

static void writer_done(Writer *w) {
        free(w->who);
        free(w->knob);
        free(w->value);
        free(w->source);
        free(w->why);
}

void writer_list_done(WriterList *l) {
        assert(l);

        for (size_t i = 0; i < l->n; i++)
                writer_done(&l->items[i]);
        free(l->items);
        *l = (WriterList){};
}

/* Append a copy of *w (its strings copied). -ENOMEM. */
static int writer_add(WriterList *l, const Writer *w) {
        Writer c = *w, *items;

        assert(l);
        assert(w->who && w->knob);

        c.who = strdup(w->who);
        c.knob = strdup(w->knob);
        c.value = strdup_or_null(w->value);
        c.source = strdup_or_null(w->source);
        c.why = strdup_or_null(w->why);
        if (!c.who || !c.knob || (w->value && !c.value) || (w->source && !c.source) || (w->why && !c.why)) {
                writer_done(&c);
                return -ENOMEM;
        }
        items = realloc(l->items, (l->n + 1) * sizeof(Writer));
        if (!items) {
                writer_done(&c);
                return -ENOMEM;
        }
        l->items = items;
        l->items[l->n++] = c;
        return 0;
}

/* Append to a "; "-separated text. -ENOMEM. */
static int text_append(char **s, const char *fmt, ...) _printf_(2, 3);
static int text_append(char **s, const char *fmt, ...) {
        _cleanup_free_ char *piece = NULL;
        char *joined;
        va_list ap;
        int r;

        assert(s);

        va_start(ap, fmt);
        r = vasprintf(&piece, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (!*s) {
                *s = TAKE_PTR(piece);
                return 0;
        }
        if (asprintf_safe(&joined, "%s; %s", *s, piece) < 0)
                return -ENOMEM;
        free(*s);
        *s = joined;
        return 0;
}

/* The queue knob whose attribute is `attr` ("queue/scheduler"), or that `attr`
 * names through a path ending in it ("../queue/scheduler"). bdi/read_ahead_kb is
 * the same setting as queue/read_ahead_kb (both set the bdi's ra_pages). */
static const Knob *queue_knob_of_attr(const char *attr) {
        for (size_t i = 0; i < _KNOB_MAX; i++) {
                const Knob *k = &knob_table[i];
                size_t la, lk;

                if (k->scope != KNOB_SCOPE_QUEUE || !k->attr)
                        continue;
                if (streq(attr, k->attr))
                        return k;
                la = strlen(attr);
                lk = strlen(k->attr);
                if (la > lk && attr[la - lk - 1] == '/' && streq(attr + la - lk, k->attr))
                        return k;
        }
        if (streq(attr, "bdi/read_ahead_kb") || str_endswith(attr, "/bdi/read_ahead_kb"))
                return knob_get(KNOB_READ_AHEAD_KB);
        return NULL;
}

/* udev's pattern match: '|'-separated alternatives, each an fnmatch(3) glob (flags
 * 0, as udev); an empty alternative matches the empty string. */
static bool udev_pattern_match(const char *pattern, const char *value) {
        const char *p = pattern;

        for (;;) {
                const char *bar = strchr(p, '|');
                size_t n = bar ? (size_t) (bar - p) : strlen(p);
                char alt[LINE_MAX_LEN];

                if (n < sizeof(alt)) {
                        memcpy(alt, p, n);
                        alt[n] = 0;
                        if (fnmatch(alt, value, 0) == 0)
                                return true;
                }
                if (!bar)
                        return false;
                p = bar + 1;
        }
}

/* ---- udev rules ---- */

typedef enum UdevOp { OP_MATCH, OP_NOMATCH, OP_ASSIGN, OP_ADD, OP_REMOVE, OP_ASSIGN_FINAL } UdevOp;

typedef struct UdevKey {
        char key[32];
        char *attr; /* the {...} part, or NULL */
        UdevOp op;
        char *value;
} UdevKey;

typedef struct UdevRule {
        UdevKey keys[RULE_KEYS_MAX];
        size_t n;
} UdevRule;

static void udev_rule_done(UdevRule *r) {
        for (size_t i = 0; i < r->n; i++) {
                free(r->keys[i].attr);
                free(r->keys[i].value);
        }
        r->n = 0;
}

static const char *const udev_known_keys[] = {
        "ACTION", "DEVPATH",  "KERNEL",  "SYMLINK", "NAME",    "ENV",        "CONST",     "TAG",
        "TAGS",   "TEST",     "PROGRAM", "RESULT",  "IMPORT",  "OPTIONS",    "OWNER",     "GROUP",
        "MODE",   "SECLABEL", "ATTR",    "SYSCTL",  "KERNELS", "SUBSYSTEMS", "SUBSYSTEM", "DRIVERS",
        "DRIVER", "ATTRS",    "RUN",     "LABEL",   "GOTO",    "DEVTYPE",    "WAIT_FOR",  "CURRENT_TAGS",
};

static bool udev_key_known(const char *k) {
        for (size_t i = 0; i < ELEMENTSOF(udev_known_keys); i++)
                if (streq(k, udev_known_keys[i]))
                        return true;
        return false;
}

static bool op_is_match(UdevOp op) {
        return op == OP_MATCH || op == OP_NOMATCH;
}

static bool op_is_assign(UdevOp op) {
        return op == OP_ASSIGN || op == OP_ADD || op == OP_ASSIGN_FINAL;
}

/* A quoted value at *p: "..." with \" (and \\) unescaped, or e"..." with the C
 * escapes udev allows there. Advances *p past it. -EINVAL on anything else. */
static int parse_value(const char **p, char **ret) {
        const char *s = *p;
        bool c_escapes = false;
        char *buf, *o;

        if (*s == 'e' && s[1] == '"') {
                c_escapes = true;
                s++;
        }
        if (*s != '"')
                return -EINVAL;
        s++;
        buf = o = malloc(strlen(s) + 1);
        if (!buf)
                return -ENOMEM;
        for (; *s != '"'; s++) {
                if (!*s) {
                        free(buf);
                        return -EINVAL;
                }
                if (*s == '\\' && (s[1] == '"' || s[1] == '\\')) {
                        *o++ = *++s;
                        continue;
                }
                if (c_escapes && *s == '\\' && s[1]) {
                        s++;
                        *o++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
                        continue;
                }
                *o++ = *s;
        }
        *o = 0;
        *p = s + 1;
        *ret = buf;
        return 0;
}

/* One logical line into keys. -EINVAL for a line udev would reject too (unknown
 * key, bad operator, unterminated value, too many keys): it is skipped. */
static int udev_rule_parse(const char *line, UdevRule *ret) {
        const char *p = line;
        int r;

        ret->n = 0;
        for (;;) {
                UdevKey *k;
                size_t n = 0;

                while (*p == ' ' || *p == '\t' || *p == ',')
                        p++;
                if (!*p)
                        return ret->n > 0 ? 0 : -EINVAL;
                if (ret->n >= RULE_KEYS_MAX)
                        goto fail;
                k = &ret->keys[ret->n];
                *k = (UdevKey){};
                while (isupper((unsigned char) *p) || *p == '_') {
                        if (n + 1 >= sizeof(k->key))
                                goto fail;
                        k->key[n++] = *p++;
                }
                k->key[n] = 0;
                if (n == 0 || !udev_key_known(k->key))
                        goto fail;
                if (*p == '{') {
                        const char *end = strchr(p, '}');
                        if (!end)
                                goto fail;
                        k->attr = strndup(p + 1, end - p - 1);
                        if (!k->attr)
                                goto fail_nomem;
                        p = end + 1;
                }
                ret->n++; /* owned by the rule from here on */
                while (*p == ' ' || *p == '\t')
                        p++;
                if (strneq(p, "==", 2))
                        k->op = OP_MATCH, p += 2;
                else if (strneq(p, "!=", 2))
                        k->op = OP_NOMATCH, p += 2;
                else if (strneq(p, "+=", 2))
                        k->op = OP_ADD, p += 2;
                else if (strneq(p, "-=", 2))
                        k->op = OP_REMOVE, p += 2;
                else if (strneq(p, ":=", 2))
                        k->op = OP_ASSIGN_FINAL, p += 2;
                else if (*p == '=')
                        k->op = OP_ASSIGN, p += 1;
                else
                        goto fail;
                while (*p == ' ' || *p == '\t')
                        p++;
                r = parse_value(&p, &k->value);
                if (r == -ENOMEM)
                        goto fail_nomem;
                if (r < 0)
                        goto fail;
                if (*p && *p != ',' && *p != ' ' && *p != '\t')
                        goto fail;
        }
fail:
        udev_rule_done(ret);
        return -EINVAL;
fail_nomem:
        udev_rule_done(ret);
        return -ENOMEM;
}

/* What we know of the disk for evaluating rules. */
typedef struct MatchCtx {
        const Device *d;
        bool sys_ok; /* d->syspath is a readable directory */
} MatchCtx;

/* The link target's last component of dir/name ("nvme" for driver), "" when there
 * is no such link. -errno when it cannot be told. */
static int link_base(const char *dir, const char *name, char **ret) {
        _cleanup_free_ char *p = path_join(dir, name);
        char buf[PATH_MAX];
        ssize_t n;
        const char *slash;

        if (!p)
                return -ENOMEM;
        n = readlink(p, buf, sizeof(buf) - 1);
        if (n < 0) {
                if (errno == ENOENT || errno == EINVAL) /* absent, or not a link */
                        return (*ret = strdup("")) ? 0 : -ENOMEM;
                return negative_errno();
        }
        buf[n] = 0;
        slash = strrchr(buf, '/');
        *ret = strdup(slash ? slash + 1 : buf);
        return *ret ? 0 : -ENOMEM;
}

/* A sysfs attribute of dir for matching: 1 read (value in *ret, trailing white
 * space stripped), 0 absent (no match in udev), -1 not known. */
static int attr_for_match(const char *dir, const char *attr, char **ret) {
        int r;

        *ret = NULL;
        /* Only plain relative names: a rule must not make us read outside sysfs. */
        if (attr[0] == '/' || attr[0] == '[' || strstr(attr, ".."))
                return -1;
        r = read_attr_at(dir, attr, ret);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;
        if (r < 0)
                return -1;
        strstrip(*ret);
        return 1;
}

/* The DEVPATH udev would see: d->syspath from its /devices/ on, or NULL. */
static const char *devpath_of(const char *syspath) {
        const char *p = strstr(syspath, "/sys/devices/");
        return p ? p + 4 : NULL;
}

/* Evaluate one device key against the disk: 1 matches, 0 does not, -1 unknown.
 * *ret_value: the value compared, for the reason text (may stay NULL). */
static int udev_key_eval(const MatchCtx *c, const UdevKey *k, char **ret_value) {
        _cleanup_free_ char *v = NULL;
        const char *fixed = NULL;
        bool m;
        int r;

        *ret_value = NULL;
        if (strchr(k->value, '$') || strchr(k->value, '%'))
                return -1; /* substitutions: not evaluated */
        if (streq(k->key, "KERNEL"))
                fixed = c->d->name;
        else if (streq(k->key, "SUBSYSTEM"))
                fixed = "block";
        else if (streq(k->key, "DEVTYPE"))
                fixed = "disk";
        else if (streq(k->key, "DEVPATH")) {
                fixed = devpath_of(c->d->syspath);
                if (!fixed)
                        return -1;
        } else if (streq(k->key, "ENV")) {
                if (!k->attr)
                        return -1;
                fixed = device_property(c->d, k->attr);
                if (!fixed)
                        fixed = "";
        } else if (streq(k->key, "DRIVER")) {
                if (!c->sys_ok)
                        return -1;
                r = link_base(c->d->syspath, "driver", &v);
                if (r < 0)
                        return r == -ENOMEM ? r : -1;
        } else if (streq(k->key, "ATTR")) {
                if (!k->attr || !c->sys_ok)
                        return -1;
                r = attr_for_match(c->d->syspath, k->attr, &v);
                if (r < 0)
                        return -1;
                if (r == 0) /* udev: a missing attribute matches nothing */
                        return 0;
        } else
                return -1; /* NAME, SYMLINK, TAG(S), TEST, PROGRAM, RESULT, CONST, SYSCTL, ... */

        if (fixed) {
                v = strdup(fixed);
                if (!v)
                        return -ENOMEM;
        }
        m = udev_pattern_match(k->value, v);
        *ret_value = TAKE_PTR(v);
        return (k->op == OP_MATCH) == m;
}

static bool key_is_parent(const UdevKey *k) {
        return streq(k->key, "KERNELS") || streq(k->key, "SUBSYSTEMS") || streq(k->key, "DRIVERS") ||
               streq(k->key, "ATTRS") || streq(k->key, "TAGS");
}

static int key_label(const UdevKey *k, char **ret) {
        return asprintf_safe(ret, "%s%s%s%s%s\"%s\"", k->key, k->attr ? "{" : "", k->attr ?: "", k->attr ? "}" : "",
                             k->op == OP_MATCH ? "==" : "!=", k->value);
}

/* One parent key on one sysfs directory: 1, 0, -1 as udev_key_eval(). */
static int parent_key_eval(const char *dir, const UdevKey *k) {
        _cleanup_free_ char *v = NULL;
        const char *slash;
        int r;

        if (strchr(k->value, '$') || strchr(k->value, '%'))
                return -1;
        if (streq(k->key, "KERNELS")) {
                slash = strrchr(dir, '/');
                v = strdup(slash ? slash + 1 : dir);
                if (!v)
                        return -1;
        } else if (streq(k->key, "SUBSYSTEMS") || streq(k->key, "DRIVERS")) {
                r = link_base(dir, streq(k->key, "SUBSYSTEMS") ? "subsystem" : "driver", &v);
                if (r < 0)
                        return -1;
        } else if (streq(k->key, "ATTRS")) {
                if (!k->attr)
                        return -1;
                r = attr_for_match(dir, k->attr, &v);
                if (r <= 0)
                        return r;
        } else
                return -1; /* TAGS: tags are in the udev database, not in sysfs */
        return (k->op == OP_MATCH) == udev_pattern_match(k->value, v);
}

/* udev's parent keys must all match on one device: the disk itself or one of its
 * sysfs parents. Walk d->syspath upwards to /sys/devices. 1 some device matches
 * them all, 0 none does (every parent read), -1 not known. */
static int parent_keys_eval(const MatchCtx *c, const UdevRule *rule, char **ret_dev) {
        _cleanup_free_ char *dir = NULL;
        bool uncertain = false;

        *ret_dev = NULL;
        if (!c->sys_ok)
                return -1;
        dir = strdup(c->d->syspath);
        if (!dir)
                return -1;
        for (unsigned depth = 0; depth < PARENT_DEPTH_MAX; depth++) {
                bool all = true, failed = false;
                char *slash;

                for (size_t i = 0; i < rule->n; i++) {
                        const UdevKey *k = &rule->keys[i];
                        int r;

                        if (!op_is_match(k->op) || !key_is_parent(k))
                                continue;
                        r = parent_key_eval(dir, k);
                        if (r == 0)
                                failed = true;
                        else if (r < 0)
                                all = false;
                }
                if (!failed && all) {
                        slash = strrchr(dir, '/');
                        *ret_dev = strdup(slash ? slash + 1 : dir);
                        return 1;
                }
                if (!failed)
                        uncertain = true;
                slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return -1;
                *slash = 0;
                if (str_endswith(dir, "/sys/devices"))
                        return uncertain ? -1 : 0;
        }
        return -1;
}

/* Evaluate a rule's match keys. Returns the verdict; *ret_why says why (the
 * failing key for NO, the keys not evaluated then the matching ones otherwise). */
static int udev_rule_eval(const MatchCtx *c, const UdevRule *rule, WriterMatch *ret_match, char **ret_why,
                          bool *ret_add, bool *ret_change) {
        _cleanup_free_ char *matched = NULL, *unknown = NULL, *why = NULL;
        bool add = true, change = true, has_parent = false;

        for (size_t i = 0; i < rule->n; i++) {
                const UdevKey *k = &rule->keys[i];
                _cleanup_free_ char *label = NULL, *v = NULL;
                int r;

                if (!op_is_match(k->op) || streq(k->key, "IMPORT"))
                        continue; /* IMPORT{...}=="..." is assumed to succeed */
                if (streq(k->key, "ACTION")) {
                        bool m_add = udev_pattern_match(k->value, "add");
                        bool m_change = udev_pattern_match(k->value, "change");
                        add = add && (k->op == OP_MATCH) == m_add;
                        change = change && (k->op == OP_MATCH) == m_change;
                        continue;
                }
                if (key_is_parent(k)) {
                        has_parent = true;
                        continue;
                }
                if (key_label(k, &label) < 0)
                        return -ENOMEM;
                r = udev_key_eval(c, k, &v);
                if (r == -ENOMEM)
                        return r;
                if (r == 0) {
                        if (streq(k->key, "KERNEL") || !v)
                                r = asprintf_safe(&why, "%s %s %s%s", label,
                                                  k->op == OP_MATCH ? "does not match" : "excludes", c->d->name,
                                                  v ? "" : " (attribute absent)");
                        else
                                r = asprintf_safe(&why, "%s %s \"%s\"", label,
                                                  k->op == OP_MATCH ? "does not match" : "excludes", v);
                        if (r < 0)
                                return -ENOMEM;
                        goto no;
                }
                if (r < 0) {
                        if (text_append(&unknown, "%s not evaluated", label) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (streq(k->key, "KERNEL")) {
                        r = text_append(&matched, "%s matches %s", label, c->d->name);
                } else
                        r = text_append(&matched, "%s %s \"%s\"", label, k->op == OP_MATCH ? "matches" : "holds for",
                                        v ?: "");
                if (r < 0)
                        return -ENOMEM;
        }

        if (!add && !change) {
                if (asprintf_safe(&why, "ACTION matches neither add nor change") < 0)
                        return -ENOMEM;
                goto no;
        }

        if (has_parent) {
                _cleanup_free_ char *labels = NULL, *dev = NULL;
                int r;

                for (size_t i = 0; i < rule->n; i++) {
                        _cleanup_free_ char *label = NULL;
                        if (!op_is_match(rule->keys[i].op) || !key_is_parent(&rule->keys[i]))
                                continue;
                        if (key_label(&rule->keys[i], &label) < 0)
                                return -ENOMEM;
                        if (labels) {
                                char *j;
                                if (asprintf_safe(&j, "%s, %s", labels, label) < 0)
                                        return -ENOMEM;
                                free(labels);
                                labels = j;
                        } else
                                labels = TAKE_PTR(label);
                }
                r = parent_keys_eval(c, rule, &dev);
                if (r == 0) {
                        if (asprintf_safe(&why, "no parent of %s matches %s", c->d->name, labels) < 0)
                                return -ENOMEM;
                        goto no;
                }
                if (r < 0)
                        r = text_append(&unknown, "%s not evaluated", labels);
                else
                        r = text_append(&matched, "%s matched on %s", labels, dev);
                if (r < 0)
                        return -ENOMEM;
        }

        *ret_add = add;
        *ret_change = change;
        if (unknown) {
                *ret_match = WRITER_MATCH_MAYBE;
                if (matched && text_append(&unknown, "%s", matched) < 0)
                        return -ENOMEM;
                *ret_why = TAKE_PTR(unknown);
                return 0;
        }
        *ret_match = WRITER_MATCH_YES;
        if (!matched && !(matched = strdup("no match keys: applies to every device")))
                return -ENOMEM;
        *ret_why = TAKE_PTR(matched);
        return 0;
no:
        *ret_match = WRITER_MATCH_NO;
        *ret_add = add;
        *ret_change = change;
        *ret_why = TAKE_PTR(why);
        return 0;
}

/* In a shell command, the word echoed into the file named at `at`:
 * "echo mq-deadline > /sys/block/%k/queue/scheduler" -> "mq-deadline". NULL when
 * it cannot be told. */
static char *echoed_value(const char *cmd, const char *at) {
        const char *gt = NULL, *start, *e, *p;
        char word[256];
        size_t n = 0, words = 0;

        for (p = at; p > cmd; p--) {
                if (p[-1] == '>') {
                        gt = p - 1;
                        break;
                }
                if (strchr(";|&()", p[-1]))
                        return NULL;
        }
        if (!gt || gt - cmd < 4)
                return NULL;
        /* The start of this command: after the last separator before '>'; in it the
         * last "echo" word (the command may sit inside sh -c '...'). */
        for (start = gt; start > cmd && !strchr(";|&(", start[-1]); start--)
                ;
        for (p = gt - 4, e = NULL; p >= start && !e; p--)
                if (strneq(p, "echo", 4) && strchr(" \t", p[4]) && (p == start || strchr(" \t'\"", p[-1])))
                        e = p;
        if (!e)
                return NULL;
        start = e;
        for (p = start + 4; p < gt;) {
                while (p < gt && strchr(" \t", *p))
                        p++;
                if (p >= gt)
                        break;
                for (e = p; e < gt && !strchr(" \t", *e); e++)
                        ;
                if (*p != '-') { /* echo -n */
                        words++;
                        n = 0;
                        for (const char *q = p; q < e && n + 1 < sizeof(word); q++)
                                if (*q != '"' && *q != '\'' && *q != '\\')
                                        word[n++] = *q;
                        word[n] = 0;
                }
                p = e;
        }
        if (words != 1 || n == 0 || strpbrk(word, "$`"))
                return NULL; /* several words, or one the shell expands: not known */
        return strdup(word);
}

/* The knob a RUN command writes, by the file it names: *ret_knob set (static),
 * *ret_value the echoed value or NULL. false when it names none. */
static bool run_writes(const char *cmd, const char **ret_knob, char **ret_value, size_t *pos) {
        for (const char *p = cmd + *pos; *p; p++) {
                const char *knob = NULL;
                size_t len = 0;

                if (strneq(p, "/proc/irq/", 10) || strneq(p, "smp_affinity", 12)) {
                        knob = knob_get(KNOB_IRQ_AFFINITY)->name;
                        len = strneq(p, "/proc/irq/", 10) ? 10 : 12;
                        /* the file name that follows /proc/irq/N/ is where the echo points */
                } else if (p > cmd && p[-1] == '/') {
                        for (size_t i = 0; i < _KNOB_MAX && !knob; i++) {
                                const Knob *k = &knob_table[i];
                                size_t lk;

                                if (k->scope != KNOB_SCOPE_QUEUE || !k->attr)
                                        continue;
                                lk = strlen(k->attr);
                                if (strneq(p, k->attr, lk) && !isalnum((unsigned char) p[lk]) && p[lk] != '_') {
                                        knob = k->name;
                                        len = lk;
                                }
                        }
                }
                if (!knob)
                        continue;
                *ret_knob = knob;
                *ret_value = echoed_value(cmd, p);
                *pos = (size_t) (p - cmd) + len;
                /* skip the rest of an IRQ path so smp_affinity after /proc/irq/N/ is not counted twice */
                if (streq(knob, knob_get(KNOB_IRQ_AFFINITY)->name))
                        while (cmd[*pos] && !strchr(" \t;|&'\")", cmd[*pos]))
                                (*pos)++;
                return true;
        }
        return false;
}

typedef struct GotoNote {
        unsigned line;
        char *label;
} GotoNote;

typedef struct RulesFile {
        GotoNote *gotos;
        size_t n_gotos;
        char **labels; /* label names with their lines in label_lines */
        unsigned *label_lines;
        size_t n_labels;
        bool too_many_gotos;
} RulesFile;

/* A GOTO before `line` whose LABEL is after it (or missing) may skip the rule. */
static const GotoNote *goto_skipping(const RulesFile *f, unsigned line) {
        for (size_t i = 0; i < f->n_gotos; i++) {
                bool after = true;
                if (f->gotos[i].line >= line)
                        continue;
                for (size_t j = 0; j < f->n_labels; j++)
                        if (streq(f->labels[j], f->gotos[i].label) && f->label_lines[j] > f->gotos[i].line)
                                after = f->label_lines[j] > line;
                if (after)
                        return &f->gotos[i];
        }
        return NULL;
}

typedef struct PendingWriter {
        Writer w;
        unsigned line;
} PendingWriter;

static int rules_file_scan(const MatchCtx *c, const char *shown_path, const char *text, WriterList *out) {
        RulesFile f = {};
        PendingWriter *pend = NULL;
        size_t n_pend = 0;
        _cleanup_free_ char *logical = NULL;
        unsigned lineno = 0;
        const char *p = text;
        int r = 0;

        logical = malloc(LINE_MAX_LEN + 1);
        if (!logical)
                return -ENOMEM;

        while (*p) {
                size_t len = 0;
                unsigned first = lineno + 1;
                bool too_long = false, more;
                _cleanup_(udev_rule_done) UdevRule rule = {};

                /* Join physical lines ending in a backslash into one logical line. */
                do {
                        const char *nl = strchr(p, '\n');
                        size_t n = nl ? (size_t) (nl - p) : strlen(p);

                        lineno++;
                        more = n > 0 && p[n - 1] == '\\';
                        if (more)
                                n--;
                        if (len + n > LINE_MAX_LEN)
                                too_long = true;
                        else {
                                memcpy(logical + len, p, n);
                                len += n;
                        }
                        p = nl ? nl + 1 : p + strlen(p);
                } while (more && *p);
                logical[len] = 0;
                if (too_long)
                        continue;

                char *s = logical;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (!*s || *s == '#')
                        continue;
                r = udev_rule_parse(s, &rule);
                if (r == -ENOMEM)
                        goto finish;
                if (r < 0) {
                        r = 0;
                        continue;
                }

                for (size_t i = 0; i < rule.n; i++) {
                        const UdevKey *k = &rule.keys[i];
                        if ((streq(k->key, "GOTO") || streq(k->key, "LABEL")) && op_is_assign(k->op) &&
                            f.n_gotos + f.n_labels >= RULE_GOTOS_MAX) {
                                f.too_many_gotos = true; /* no skip note for this file: bounded work */
                                continue;
                        }
                        if (streq(k->key, "GOTO") && op_is_assign(k->op)) {
                                GotoNote *g = realloc(f.gotos, (f.n_gotos + 1) * sizeof(GotoNote));
                                if (!g)
                                        goto nomem;
                                f.gotos = g;
                                f.gotos[f.n_gotos] = (GotoNote){first, strdup(k->value)};
                                if (!f.gotos[f.n_gotos].label)
                                        goto nomem;
                                f.n_gotos++;
                        } else if (streq(k->key, "LABEL") && op_is_assign(k->op)) {
                                unsigned *ll = realloc(f.label_lines, (f.n_labels + 1) * sizeof(unsigned));
                                if (!ll)
                                        goto nomem;
                                f.label_lines = ll;
                                f.label_lines[f.n_labels] = first;
                                if (strv_extend(&f.labels, k->value) < 0)
                                        goto nomem;
                                f.n_labels++;
                        }
                }

                bool evaluated = false;
                WriterMatch match = WRITER_MATCH_NO;
                _cleanup_free_ char *why = NULL;
                bool add = false, change = false;

                for (size_t i = 0; i < rule.n; i++) {
                        const UdevKey *k = &rule.keys[i];
                        size_t pos = 0;

                        if (!op_is_assign(k->op))
                                continue;
                        for (;;) {
                                const char *knob = NULL;
                                _cleanup_free_ char *value = NULL, *source = NULL;
                                PendingWriter *np;

                                if (streq(k->key, "ATTR") && k->attr && pos == 0) {
                                        const Knob *kn = queue_knob_of_attr(k->attr);
                                        pos = 1;
                                        if (!kn)
                                                break;
                                        knob = kn->name;
                                        value = strdup(k->value);
                                        if (!value)
                                                goto nomem;
                                } else if (streq(k->key, "RUN")) {
                                        if (!run_writes(k->value, &knob, &value, &pos))
                                                break;
                                } else
                                        break;

                                if (n_pend >= FILE_WRITERS_MAX)
                                        break; /* garbage, bounded: the first ones are reported */
                                if (!evaluated) {
                                        r = udev_rule_eval(c, &rule, &match, &why, &add, &change);
                                        if (r < 0)
                                                goto finish;
                                        evaluated = true;
                                }
                                if (asprintf_safe(&source, "%s:%u", shown_path, first) < 0)
                                        goto nomem;
                                np = realloc(pend, (n_pend + 1) * sizeof(PendingWriter));
                                if (!np)
                                        goto nomem;
                                pend = np;
                                pend[n_pend++] = (PendingWriter){
                                        .w = {.kind = WRITER_UDEV_RULE,
                                              .who = (char *) "udev rule",
                                              .knob = (char *) knob,
                                              .value = TAKE_PTR(value),
                                              .source = TAKE_PTR(source),
                                              .match = match,
                                              .why = strdup_or_null(why),
                                              .on_add = add,
                                              .on_change = change},
                                        .line = first,
                                };
                                if (why && !pend[n_pend - 1].w.why)
                                        goto nomem;
                        }
                }
        }

        /* With the whole file read, a GOTO jumping over a rule can be told. */
        for (size_t i = 0; i < n_pend; i++) {
                const GotoNote *g = pend[i].w.match != WRITER_MATCH_NO && !f.too_many_gotos
                                            ? goto_skipping(&f, pend[i].line)
                                            : NULL;
                if (g && text_append(&pend[i].w.why, "GOTO=\"%s\" at line %u may skip it (not followed)", g->label,
                                     g->line) < 0)
                        goto nomem;
                r = writer_add(out, &pend[i].w);
                if (r < 0)
                        goto finish;
        }
        r = 0;
        goto finish;
nomem:
        r = -ENOMEM;
finish:
        for (size_t i = 0; i < n_pend; i++) {
                free(pend[i].w.value);
                free(pend[i].w.source);
                free(pend[i].w.why);
        }
        free(pend);
        for (size_t i = 0; i < f.n_gotos; i++)
                free(f.gotos[i].label);
        free(f.gotos);
        strv_free(f.labels);
        free(f.label_lines);
        return r;
}

typedef struct RulesEntry {
        char *name;
        const char *dir; /* rules_dirs[] */
        bool masked;
} RulesEntry;

static int rules_entry_cmp(const void *a, const void *b) {
        return strcmp(((const RulesEntry *) a)->name, ((const RulesEntry *) b)->name);
}

static int udev_rules_scan(const char *root, const MatchCtx *c, WriterList *out) {
        RulesEntry *entries = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(rules_dirs) && n < RULES_FILES_MAX; i++) {
                _cleanup_close_ int fd = -1;
                DIR *dir;
                struct dirent *de;

                fd = root_open(root, rules_dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
                if (fd < 0)
                        continue;
                dir = fdopendir(fd);
                if (!dir)
                        continue;
                fd = -1; /* owned by dir */
                while ((de = readdir(dir)) && n < RULES_FILES_MAX) {
                        struct stat st;
                        bool masked = false, dup = false;
                        RulesEntry *ne;

                        if (!str_endswith(de->d_name, ".rules") || de->d_name[0] == '.')
                                continue;
                        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        if (S_ISLNK(st.st_mode)) {
                                char target[PATH_MAX];
                                ssize_t l = readlinkat(dirfd(dir), de->d_name, target, sizeof(target) - 1);
                                if (l < 0)
                                        continue;
                                target[l] = 0;
                                masked = streq(target, "/dev/null");
                        } else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
                                masked = true;
                        else if (!S_ISREG(st.st_mode))
                                continue; /* a FIFO, socket, directory: not a rules file */
                        for (size_t j = 0; j < n && !dup; j++)
                                dup = streq(entries[j].name, de->d_name);
                        if (dup)
                                continue; /* masked by an earlier directory */
                        ne = realloc(entries, (n + 1) * sizeof(RulesEntry));
                        if (!ne) {
                                closedir(dir);
                                r = -ENOMEM;
                                goto finish;
                        }
                        entries = ne;
                        entries[n] = (RulesEntry){strdup(de->d_name), rules_dirs[i], masked};
                        if (!entries[n].name) {
                                closedir(dir);
                                r = -ENOMEM;
                                goto finish;
                        }
                        n++;
                }
                closedir(dir);
        }

        if (n > 0)
                qsort(entries, n, sizeof(RulesEntry), rules_entry_cmp);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;

                if (entries[i].masked)
                        continue;
                if (asprintf_safe(&path, "%s/%s", entries[i].dir, entries[i].name) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                /* O_NONBLOCK and a regular-file check: a FIFO is refused, never waited on. */
                r = root_read_file_typed(root, path, RULES_FILE_MAX, &text);
                if (r == -ENOMEM)
                        goto finish;
                if (r < 0) {
                        r = 0;
                        continue;
                }
                r = rules_file_scan(c, path, text, out);
                if (r < 0)
                        goto finish;
        }
finish:
        for (size_t i = 0; i < n; i++)
                free(entries[i].name);
        free(entries);
        return r;
}

/* ---- processes ---- */

typedef struct Procs {
        int *tuned, *irqbalance, *iotuned;
        size_t n_tuned, n_irqbalance, n_iotuned;
        bool readable;
} Procs;

static void procs_done(Procs *p) {
        free(p->tuned);
        free(p->irqbalance);
        free(p->iotuned);
}

static int pid_push(int **v, size_t *n, int pid) {
        int *nv = realloc(*v, (*n + 1) * sizeof(int));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        (*v)[(*n)++] = pid;
        return 0;
}

static int int_cmp(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

static int procs_scan(const char *root, Procs *ret) {
        _cleanup_close_ int fd = -1;
        struct dirent *de;
        unsigned seen = 0;
        DIR *dir;
        int r = 0;

        *ret = (Procs){};
        fd = root_open(root, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
                return 0;
        dir = fdopendir(fd);
        if (!dir)
                return 0;
        fd = -1;
        ret->readable = true;
        while ((de = readdir(dir)) && seen++ < PROC_ENTRIES_MAX) {
                _cleanup_free_ char *path = NULL, *comm = NULL;
                int pid;

                if (safe_atoi(de->d_name, &pid) < 0 || pid <= 0)
                        continue;
                if (asprintf_safe(&path, "/proc/%d/comm", pid) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (root_read_file(root, path, 64, &comm) < 0)
                        continue; /* gone, or not readable */
                strstrip(comm);
                if (streq(comm, "tuned"))
                        r = pid_push(&ret->tuned, &ret->n_tuned, pid);
                else if (streq(comm, "irqbalance"))
                        r = pid_push(&ret->irqbalance, &ret->n_irqbalance, pid);
                else if (streq(comm, "iotuned") && pid != getpid())
                        r = pid_push(&ret->iotuned, &ret->n_iotuned, pid);
                if (r < 0)
                        break;
        }
        closedir(dir);
        if (r < 0) {
                procs_done(ret);
                return r;
        }
        if (ret->n_tuned)
                qsort(ret->tuned, ret->n_tuned, sizeof(int), int_cmp);
        if (ret->n_irqbalance)
                qsort(ret->irqbalance, ret->n_irqbalance, sizeof(int), int_cmp);
        if (ret->n_iotuned)
                qsort(ret->iotuned, ret->n_iotuned, sizeof(int), int_cmp);
        return 0;
}

static int process_writers(const Procs *p, WriterList *out) {
        /* The caller is the daemon: any other iotuned fights it. The caller is
         * iotunectl: one iotuned is the daemon, two or more fight each other. */
        size_t threshold = streq(program_invocation_short_name, "iotuned") ? 1 : 2;
        int r;

        for (size_t i = 0; i < p->n_irqbalance; i++) {
                _cleanup_free_ char *who = NULL;
                if (asprintf_safe(&who, "irqbalance (pid %d)", p->irqbalance[i]) < 0)
                        return -ENOMEM;
                r = writer_add(
                        out,
                        &(Writer){
                                .kind = WRITER_IRQBALANCE,
                                .who = who,
                                .knob = (char *) knob_get(KNOB_IRQ_AFFINITY)->name,
                                .match = WRITER_MATCH_YES,
                                .why = (char *) "moves vectors it has not been told to leave alone (banned)",
                        });
                if (r < 0)
                        return r;
        }
        if (p->n_iotuned < threshold)
                return 0;
        for (size_t i = 0; i < p->n_iotuned; i++) {
                _cleanup_free_ char *who = NULL;
                if (asprintf_safe(&who, "another iotuned (pid %d)", p->iotuned[i]) < 0)
                        return -ENOMEM;
                r = writer_add(
                        out, &(Writer){
                                     .kind = WRITER_IOTUNED,
                                     .who = who,
                                     .knob = (char *) "*",
                                     .match = WRITER_MATCH_YES,
                                     .why = (char *) (threshold == 1
                                                              ? "a second iotuned tunes the same disks"
                                                              : "more than one iotuned runs; they tune the same disks"),
                             });
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- TuneD ---- */

typedef struct TunedOpt {
        char *key, *value, *source;
        char *profile; /* the profile whose file set it */
        char *top;     /* the name in active_profile it was loaded for */
} TunedOpt;

typedef struct TunedSection {
        char *name;
        TunedOpt *opts;
        size_t n_opts;
} TunedSection;

typedef struct TunedProfile {
        TunedSection *sections;
        size_t n;
        unsigned loads;  /* the merged profile: tuned.conf files read into it (TUNED_LOADS_MAX) */
} TunedProfile;

static void tuned_opt_done(TunedOpt *o) {
        free(o->key);
        free(o->value);
        free(o->source);
        free(o->profile);
        free(o->top);
}

static void tuned_profile_done(TunedProfile *p) {
        for (size_t i = 0; i < p->n; i++) {
                for (size_t j = 0; j < p->sections[i].n_opts; j++)
                        tuned_opt_done(&p->sections[i].opts[j]);
                free(p->sections[i].opts);
                free(p->sections[i].name);
        }
        free(p->sections);
        *p = (TunedProfile){};
}

static TunedSection *tuned_section(TunedProfile *p, const char *name, bool create) {
        TunedSection *ns;

        for (size_t i = 0; i < p->n; i++)
                if (streq(p->sections[i].name, name))
                        return &p->sections[i];
        if (!create)
                return NULL;
        ns = realloc(p->sections, (p->n + 1) * sizeof(TunedSection));
        if (!ns)
                return NULL;
        p->sections = ns;
        p->sections[p->n] = (TunedSection){.name = strdup(name)};
        if (!p->sections[p->n].name)
                return NULL;
        return &p->sections[p->n++];
}

static const TunedOpt *tuned_opt(const TunedSection *s, const char *key) {
        for (size_t i = 0; i < s->n_opts; i++)
                if (streq(s->opts[i].key, key))
                        return &s->opts[i];
        return NULL;
}

/* Set an option, replacing an earlier one of the same key (a later profile
 * overrides what it includes). */
static int tuned_set(TunedSection *s, const char *key, const char *value, const char *source, const char *profile,
                     const char *top) {
        TunedOpt o = {strdup(key), strdup(value), strdup(source), strdup(profile), strdup(top)}, *no;

        if (!o.key || !o.value || !o.source || !o.profile || !o.top) {
                tuned_opt_done(&o);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_opts; i++)
                if (streq(s->opts[i].key, key)) {
                        tuned_opt_done(&s->opts[i]);
                        s->opts[i] = o;
                        return 0;
                }
        if (s->n_opts >= TUNED_OPTS_MAX) {
                tuned_opt_done(&o);
                return 0; /* no profile has that many: garbage, bounded */
        }
        no = realloc(s->opts, (s->n_opts + 1) * sizeof(TunedOpt));
        if (!no) {
                tuned_opt_done(&o);
                return -ENOMEM;
        }
        s->opts = no;
        s->opts[s->n_opts++] = o;
        return 0;
}

static bool profile_name_ok(const char *n) {
        return n[0] && strlen(n) < 256 && !strchr(n, '/') && !streq(n, ".") && !streq(n, "..") && !strchr(n, '$');
}

static int tuned_load(const char *root, const char *name, const char *top, unsigned depth, TunedProfile *merged);

/* Parse one tuned.conf into `merged`: includes first, then this file's options
 * over them. */
static int tuned_parse(const char *root, const char *shown, const char *name, const char *top, const char *text,
                       unsigned depth, TunedProfile *merged) {
        TunedProfile own = {};
        _cleanup_free_ char *section = NULL;
        const char *p = text;
        unsigned lineno = 0;
        int r = 0;

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                _cleanup_free_ char *line = NULL, *source = NULL;
                char *s, *eq;

                lineno++;
                if (n <= LINE_MAX_LEN)
                        line = strndup(p, n);
                p = nl ? nl + 1 : p + n;
                if (n > LINE_MAX_LEN)
                        continue;
                if (!line) {
                        r = -ENOMEM;
                        goto finish;
                }
                s = strstrip(line);
                if (!*s || *s == '#' || *s == ';')
                        continue;
                if (*s == '[') {
                        char *end = strchr(s, ']');
                        free(section);
                        section = end ? strndup(s + 1, end - s - 1) : NULL;
                        if (end && !section) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        if (section)
                                strstrip(section);
                        continue;
                }
                eq = strchr(s, '=');
                if (!section || !eq)
                        continue;
                *eq = 0;
                strstrip(s);
                if (asprintf_safe(&source, "%s:%u", shown, lineno) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                TunedSection *sec = tuned_section(&own, section, true);
                if (!sec) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = tuned_set(sec, s, strstrip(eq + 1), source, name, top);
                if (r < 0)
                        goto finish;
        }

        /* [main] include=a,b: loaded first, in order, this file over them. */
        TunedSection *main_sec = tuned_section(&own, "main", false);
        const TunedOpt *inc = main_sec ? tuned_opt(main_sec, "include") : NULL;
        if (inc && depth + 1 < TUNED_INCLUDE_DEPTH) {
                _cleanup_free_ char *list = strdup(inc->value);
                char *save = NULL;
                if (!list) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (char *t = strtok_r(list, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
                        r = tuned_load(root, t, top, depth + 1, merged);
                        if (r < 0)
                                goto finish;
                }
        }
        for (size_t i = 0; i < own.n; i++) {
                TunedSection *src = &own.sections[i], *dst;
                const TunedOpt *rep = tuned_opt(src, "replace");

                if (streq(src->name, "main"))
                        continue;
                dst = tuned_section(merged, src->name, true);
                if (!dst) {
                        r = -ENOMEM;
                        goto finish;
                }
                if (rep && parse_boolean(rep->value) > 0) {
                        for (size_t j = 0; j < dst->n_opts; j++)
                                tuned_opt_done(&dst->opts[j]);
                        dst->n_opts = 0;
                }
                for (size_t j = 0; j < src->n_opts; j++) {
                        r = tuned_set(dst, src->opts[j].key, src->opts[j].value, src->opts[j].source,
                                      src->opts[j].profile, src->opts[j].top);
                        if (r < 0)
                                goto finish;
                }
        }
finish:
        tuned_profile_done(&own);
        return r;
}

static int tuned_load(const char *root, const char *name, const char *top, unsigned depth, TunedProfile *merged) {
        /* /etc overrides /usr/lib; TuneD 2.23+ also keeps profiles in a profiles/ subdirectory. */
        static const char *const dirs[] = {"/etc/tuned/profiles", "/etc/tuned", "/usr/lib/tuned/profiles",
                                           "/usr/lib/tuned"};
        int r;

        if (!profile_name_ok(name) || merged->loads >= TUNED_LOADS_MAX)
                return 0;
        merged->loads++;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;

                if (asprintf_safe(&path, "%s/%s/tuned.conf", dirs[i], name) < 0)
                        return -ENOMEM;
                r = root_read_file_typed(root, path, RULES_FILE_MAX, &text);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOENT || r == -ENOTDIR)
                        continue;
                if (r < 0)
                        return 0; /* there, but not a readable regular file: TuneD cannot use it either */
                return tuned_parse(root, path, name, top, text, depth, merged);
        }
        return 0;
}

/* TuneD's devices= (tuned/hardware/device_matcher.py): rules separated by white
 * space or commas, "!" negates; with no positive rule "*" is implied; a device
 * matches a positive rule and no negative one. */
static bool tuned_devices_match(const char *spec, const char *name) {
        _cleanup_free_ char *list = strdup(spec);
        bool pos = false, any_pos = false, neg = false;
        char *save = NULL;

        if (!list)
                return false;
        for (char *t = strtok_r(list, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
                if (t[0] == '!')
                        neg = neg || fnmatch(t + 1, name, 0) == 0;
                else {
                        any_pos = true;
                        pos = pos || fnmatch(t, name, 0) == 0;
                }
        }
        return (pos || !any_pos) && !neg;
}

static int tuned_writer(WriterList *out, const TunedOpt *o, const char *knob, const char *value, WriterMatch match,
                        const char *why, const char *running, bool dormant) {
        _cleanup_free_ char *who = NULL, *full_why = NULL;

        if (streq(o->profile, o->top)) {
                if (asprintf_safe(&who, "TuneD profile '%s'", o->top) < 0)
                        return -ENOMEM;
        } else if (asprintf_safe(&who, "TuneD profile '%s' (via '%s')", o->top, o->profile) < 0)
                return -ENOMEM;
        if (asprintf_safe(&full_why, "%s; %s", why, running) < 0)
                return -ENOMEM;
        return writer_add(out, &(Writer){
                                       .kind = WRITER_TUNED,
                                       .who = who,
                                       .knob = (char *) knob,
                                       .value = (char *) value,
                                       .source = o->source,
                                       .match = match,
                                       .why = full_why,
                                       .dormant = dormant,
                               });
}

/* The paths by which a [sysfs] key can name attribute `attr` of the disk. */
static bool sysfs_key_matches(const char *key, const Device *d, const char *attr) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        const char *dp = devpath_of(d->syspath);

        if (asprintf_safe(&a, "/sys/block/%s/%s", d->name, attr) < 0 ||
            asprintf_safe(&b, "/sys/class/block/%s/%s", d->name, attr) < 0)
                return false;
        if (fnmatch(key, a, FNM_PATHNAME) == 0 || fnmatch(key, b, FNM_PATHNAME) == 0)
                return true;
        return dp && asprintf_safe(&c, "/sys%s/%s", dp, attr) >= 0 && fnmatch(key, c, FNM_PATHNAME) == 0;
}

static int tuned_profile_writers(const TunedProfile *prof, const Device *d, const char *running, bool dormant,
                                 WriterList *out) {
        int r;

        for (size_t i = 0; i < prof->n; i++) {
                const TunedSection *s = &prof->sections[i];
                const TunedOpt *type = tuned_opt(s, "type"), *en = tuned_opt(s, "enabled");
                const char *t = type ? type->value : s->name;

                if (en && parse_boolean(en->value) == 0)
                        continue;
                if (streq(t, "disk")) {
                        const TunedOpt *dev = tuned_opt(s, "devices"), *udev_re = tuned_opt(s, "devices_udev_regex");
                        WriterMatch match = WRITER_MATCH_YES;
                        _cleanup_free_ char *why = NULL;

                        if (udev_re) {
                                match = WRITER_MATCH_MAYBE;
                                r = asprintf_safe(&why, "[%s] devices_udev_regex=%s not evaluated", s->name,
                                                  udev_re->value);
                        } else if (!dev)
                                r = asprintf_safe(&why, "[%s] has no devices=: applies to every disk", s->name);
                        else if (strchr(dev->value, '$')) {
                                match = WRITER_MATCH_MAYBE;
                                r = asprintf_safe(&why, "[%s] devices=%s has variables, not evaluated", s->name,
                                                  dev->value);
                        } else {
                                match = tuned_devices_match(dev->value, d->name) ? WRITER_MATCH_YES : WRITER_MATCH_NO;
                                r = asprintf_safe(&why, "[%s] devices=%s %s %s", s->name, dev->value,
                                                  match == WRITER_MATCH_YES ? "matches" : "excludes", d->name);
                        }
                        if (r < 0)
                                return -ENOMEM;
                        for (size_t j = 0; j < s->n_opts; j++) {
                                const TunedOpt *o = &s->opts[j];
                                _cleanup_free_ char *value = NULL, *owhy = NULL;
                                const char *knob;

                                if (streq(o->key, "elevator")) {
                                        knob = knob_get(KNOB_SCHEDULER)->name;
                                        value = strdup(o->value);
                                        if (!value)
                                                return -ENOMEM;
                                } else if (streq(o->key, "readahead")) {
                                        /* plugin_disk.py _parse_ra(): kB, or 512-byte sectors when
                                         * the number is followed by a word starting with "s". */
                                        char unit[16] = "";
                                        unsigned long long v;
                                        int n = 0;
                                        knob = knob_get(KNOB_READ_AHEAD_KB)->name;
                                        if (sscanf(o->value, "%llu%n %15s", &v, &n, unit) >= 1 && v < (1ULL << 40))
                                                r = asprintf_safe(&value, "%llu", unit[0] == 's' ? v / 2 : v);
                                        else
                                                r = (value = strdup(o->value)) ? 0 : -ENOMEM;
                                        if (r < 0)
                                                return -ENOMEM;
                                } else if (streq(o->key, "readahead_multiply")) {
                                        knob = knob_get(KNOB_READ_AHEAD_KB)->name;
                                        if (asprintf_safe(&owhy, "%s; readahead_multiply=%s multiplies the value found",
                                                          why, o->value) < 0)
                                                return -ENOMEM;
                                } else
                                        continue;
                                r = tuned_writer(out, o, knob, value, match, owhy ?: why, running, dormant);
                                if (r < 0)
                                        return r;
                        }
                } else if (streq(t, "sysfs")) {
                        for (size_t j = 0; j < s->n_opts; j++) {
                                const TunedOpt *o = &s->opts[j];
                                const char *slash;

                                if (!str_startswith(o->key, "/sys/"))
                                        continue;
                                /* The attribute part, "queue/nr_requests" (or a glob of it). */
                                slash = strrchr(o->key, '/');
                                while (slash > o->key && slash[-1] != '/')
                                        slash--;
                                if (slash <= o->key)
                                        continue;
                                for (size_t k = 0; k < _KNOB_MAX; k++) {
                                        const Knob *kn = &knob_table[k];
                                        _cleanup_free_ char *why = NULL;
                                        bool m;

                                        if (kn->scope != KNOB_SCOPE_QUEUE || !kn->attr ||
                                            fnmatch(slash, kn->attr, FNM_PATHNAME) != 0)
                                                continue;
                                        m = sysfs_key_matches(o->key, d, kn->attr);
                                        if (asprintf_safe(&why, "[%s] %s %s /sys/block/%s/%s", s->name, o->key,
                                                          m ? "matches" : "does not match", d->name, kn->attr) < 0)
                                                return -ENOMEM;
                                        r = tuned_writer(out, o, kn->name, o->value,
                                                         m ? WRITER_MATCH_YES : WRITER_MATCH_NO, why, running, dormant);
                                        if (r < 0)
                                                return r;
                                }
                        }
                } else if (streq(t, "scheduler")) {
                        const TunedOpt *o = tuned_opt(s, "isolated_cores");
                        _cleanup_free_ char *why = NULL;

                        if (!o)
                                continue;
                        if (asprintf_safe(&why, "[%s] isolated_cores=%s moves IRQs off those CPUs", s->name, o->value) <
                            0)
                                return -ENOMEM;
                        r = tuned_writer(out, o, knob_get(KNOB_IRQ_AFFINITY)->name, NULL, WRITER_MATCH_YES, why,
                                         running, dormant);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int tuned_scan(const char *root, const Device *d, const Procs *procs, WriterList *out) {
        _cleanup_free_ char *active = NULL, *running = NULL, *names = NULL;
        TunedProfile merged = {};
        char *save = NULL;
        unsigned count = 0;
        bool dormant;
        int r;

        r = root_read_file_typed(root, "/etc/tuned/active_profile", 4096, &active);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        active[strcspn(active, "\n")] = 0;

        if (procs->n_tuned > 0)
                r = asprintf_safe(&running, "tuned is running (pid %d)", procs->tuned[0]);
        else {
                _cleanup_free_ char *pid = NULL;
                unsigned n = 0;
                /* Not in /proc: unreadable, or hidden (the daemon's unit has
                 * ProtectProc=invisible, which hides processes with more capabilities
                 * than its own). The pid file, and whether that pid is alive, then. */
                if (root_read_file(root, "/run/tuned/tuned.pid", 64, &pid) >= 0 && safe_atou(strstrip(pid), &n) >= 0 &&
                    n > 0 && n <= INT32_MAX && (!root_is_set(root) ? kill((pid_t) n, 0) == 0 || errno == EPERM
                                                                   : !procs->readable))
                        r = asprintf_safe(&running, "tuned may be running (tuned.pid says %u)", n);
                else
                        r = (running = strdup("tuned is not running")) ? 0 : -ENOMEM;
        }
        if (r < 0)
                return -ENOMEM;
        dormant = str_startswith(running, "tuned is not");

        /* Several names: TuneD merges them in order, each over the ones before. */
        names = strdup(active);
        if (!names)
                return -ENOMEM;
        for (char *t = strtok_r(names, " \t", &save); t && count < TUNED_PROFILES_MAX;
             t = strtok_r(NULL, " \t", &save), count++) {
                /* Each name its own budget: one that fans out does not starve the next. */
                merged.loads = 0;
                r = tuned_load(root, t, t, 0, &merged);
                if (r < 0)
                        goto finish;
        }
        r = tuned_profile_writers(&merged, d, running, dormant, out);
finish:
        tuned_profile_done(&merged);
        return r;
}

/* ---- entry points ---- */

int writers_scan(const char *root, const Device *d, WriterList *ret) {
        WriterList l = {};
        Procs procs = {};
        MatchCtx c = {.d = d};
        struct stat st;
        int r;

        assert(d);
        assert(d->name);
        assert(ret);

        if (!root)
                root = "";
        c.sys_ok = d->syspath && stat(d->syspath, &st) >= 0 && S_ISDIR(st.st_mode);

        r = procs_scan(root, &procs);
        if (r < 0)
                return r;
        r = udev_rules_scan(root, &c, &l);
        if (r >= 0)
                r = tuned_scan(root, d, &procs, &l);
        if (r >= 0)
                r = process_writers(&procs, &l);
        procs_done(&procs);
        if (r < 0) {
                writer_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

const Writer *writers_for_knob(const WriterList *l, const char *knob) {
        const Writer *best = NULL;
        int best_rank = 0;

        assert(l);
        assert(knob);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                int rank;

                if (w->match == WRITER_MATCH_NO)
                        continue;
                if (streq(w->knob, knob))
                        rank = w->match == WRITER_MATCH_YES ? 4 : 2;
                else if (streq(w->knob, "*"))
                        rank = w->match == WRITER_MATCH_YES ? 3 : 1;
                else
                        continue;
                if (rank >= best_rank) { /* ties: the later one acts last */
                        best = w;
                        best_rank = rank;
                }
        }
        return best;
}

const Writer *writers_for_drift(const WriterList *l, const char *knob, const char *value_seen, const char *udev_action) {
        const Knob *k = knob_by_name(knob);
        const Writer *best = NULL;
        int best_rank = -1;

        assert(l);
        assert(knob);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                bool exact = streq(w->knob, knob), agrees = false;
                int rank;

                if (w->match == WRITER_MATCH_NO || w->dormant || (!exact && !streq(w->knob, "*")))
                        continue;
                if (value_seen && w->value) {
                        /* One that writes another value did not leave this one. */
                        _cleanup_free_ char *norm = NULL;
                        if (k && k->normalize && k->normalize(w->value, &norm) >= 0)
                                agrees = streq(norm, value_seen);
                        else
                                agrees = streq(w->value, value_seen);
                        if (!agrees)
                                continue;
                }
                rank = (agrees ? 8 : 0) + (w->match == WRITER_MATCH_YES ? 4 : 0) + (exact ? 2 : 0) +
                       (udev_action && w->kind == WRITER_UDEV_RULE &&
                                        (streq(udev_action, "add") ? w->on_add : w->on_change)
                                ? 1
                                : 0);
                if (rank >= best_rank) { /* ties: the later one acts last */
                        best = w;
                        best_rank = rank;
                }
        }
        return best;
}

static const char *const writer_kinds[] = {
        [WRITER_UDEV_RULE] = "udev-rule-writer",
        [WRITER_TUNED] = "tuned-writer",
        [WRITER_IRQBALANCE] = "irqbalance-writer",
        [WRITER_IOTUNED] = "iotuned-writer",
};

int writers_findings(const WriterList *l, const char *device, FindingList *out) {
        assert(l);
        assert(device);
        assert(out);

        for (size_t i = 0; i < l->n; i++) {
                const Writer *w = &l->items[i];
                const Knob *k = knob_by_name(w->knob);
                bool queue = k && k->scope == KNOB_SCOPE_QUEUE;
                FindingSeverity sev = FINDING_NOTICE;
                _cleanup_free_ char *what = NULL, *events = NULL;
                const char *maybe = w->match == WRITER_MATCH_MAYBE ? "may " : "";
                Finding *f;
                int r;

                if (w->match == WRITER_MATCH_NO || (size_t) w->kind >= ELEMENTSOF(writer_kinds))
                        continue;
                if (w->match == WRITER_MATCH_YES &&
                    (((w->kind == WRITER_UDEV_RULE || (w->kind == WRITER_TUNED && !w->dormant)) && queue) ||
                     w->kind == WRITER_IOTUNED))
                        sev = FINDING_WARNING;

                if (streq(w->knob, "*"))
                        r = (what = strdup("may write every knob")) ? 0 : -ENOMEM;
                else if (w->value)
                        r = asprintf_safe(&what, "%s%s %s=%s", maybe, w->match == WRITER_MATCH_MAYBE ? "set" : "sets",
                                          w->knob, w->value);
                else
                        r = asprintf_safe(&what, "%s%s %s (value not known)", maybe,
                                          w->match == WRITER_MATCH_MAYBE ? "write" : "writes", w->knob);
                if (r < 0)
                        return -ENOMEM;
                if (w->kind == WRITER_UDEV_RULE && asprintf_safe(&events, " on %s events",
                                                                 w->on_add && w->on_change ? "add|change"
                                                                 : w->on_add               ? "add"
                                                                                           : "change") < 0)
                        return -ENOMEM;

                if (w->kind == WRITER_IRQBALANCE)
                        /* Its why says what it does to a vector; no value to name. */
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, NULL, "%s: %s", w->who,
                                        w->why ?: "moves interrupt vectors");
                else if (w->kind == WRITER_TUNED)
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, w->source, "%s (%s) %s (%s)",
                                        w->source ?: "?", w->who, what, w->why ?: "");
                else
                        f = finding_add(out, device, writer_kinds[w->kind], sev, w->knob, w->source, "%s %s%s (%s)",
                                        w->source ?: w->who, what, events ?: "", w->why ?: "");
                if (!f)
                        return -ENOMEM;
        }
        return 0;
}
