/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writers: the udev rules that write a disk's knobs (ATTR{} assignments, RUN
 * programs), each with whether its match keys take in the disk. */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
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
#include "writers-internal.h"

#define RULES_FILES_MAX 4096         /* *.rules files over all directories */
#define RULE_KEYS_MAX 64             /* keys in one udev rule */
#define RULE_GOTOS_MAX 256           /* GOTOs and LABELs per rules file looked at for the skip note */
#define FILE_WRITERS_MAX 256         /* writers kept per rules file */
#define PARENT_DEPTH_MAX 32          /* sysfs parents walked for ATTRS/KERNELS/... */

/* udev's rule directories in precedence order (systemd: src/udev/udev-rules.c
 * RULES_DIRS). /lib is /usr/lib on usr-merged systems; base-name precedence makes
 * the same file seen twice count once. */
static const char *const rules_dirs[] = {
        "/etc/udev/rules.d",     "/run/udev/rules.d", "/usr/local/lib/udev/rules.d",
        "/usr/lib/udev/rules.d", "/lib/udev/rules.d",
};

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
                fixed = writers_devpath_of(c->d->syspath);
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
                        if (writers_text_append(&unknown, "%s not evaluated", label) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (streq(k->key, "KERNEL")) {
                        r = writers_text_append(&matched, "%s matches %s", label, c->d->name);
                } else
                        r = writers_text_append(&matched, "%s %s \"%s\"", label, k->op == OP_MATCH ? "matches" : "holds for",
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
                        r = writers_text_append(&unknown, "%s not evaluated", labels);
                else
                        r = writers_text_append(&matched, "%s matched on %s", labels, dev);
                if (r < 0)
                        return -ENOMEM;
        }

        *ret_add = add;
        *ret_change = change;
        if (unknown) {
                *ret_match = WRITER_MATCH_MAYBE;
                if (matched && writers_text_append(&unknown, "%s", matched) < 0)
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

/* The next logical line from *p into logical (LINE_MAX_LEN + 1 bytes): physical
 * lines ending in a backslash are joined. Advances *p and *lineno past it. false
 * when it is too long (it is then skipped whole). */
static bool next_logical_line(const char **p, unsigned *lineno, char *logical) {
        size_t len = 0;
        bool too_long = false, more;

        do {
                const char *nl = strchr(*p, '\n');
                size_t n = nl ? (size_t) (nl - *p) : strlen(*p);

                (*lineno)++;
                more = n > 0 && (*p)[n - 1] == '\\';
                if (more)
                        n--;
                if (len + n > LINE_MAX_LEN)
                        too_long = true;
                else {
                        memcpy(logical + len, *p, n);
                        len += n;
                }
                *p = nl ? nl + 1 : *p + strlen(*p);
        } while (more && **p);
        logical[len] = 0;
        return !too_long;
}

/* Note the rule's GOTOs and LABELs (at line `first`) in f, for goto_skipping().
 * 0, or -ENOMEM. */
static int rules_file_note_gotos(RulesFile *f, const UdevRule *rule, unsigned first) {
        for (size_t i = 0; i < rule->n; i++) {
                const UdevKey *k = &rule->keys[i];
                if ((streq(k->key, "GOTO") || streq(k->key, "LABEL")) && op_is_assign(k->op) &&
                    f->n_gotos + f->n_labels >= RULE_GOTOS_MAX) {
                        f->too_many_gotos = true; /* no skip note for this file: bounded work */
                        continue;
                }
                if (streq(k->key, "GOTO") && op_is_assign(k->op)) {
                        GotoNote *g = realloc(f->gotos, (f->n_gotos + 1) * sizeof(GotoNote));
                        if (!g)
                                return -ENOMEM;
                        f->gotos = g;
                        f->gotos[f->n_gotos] = (GotoNote){first, strdup(k->value)};
                        if (!f->gotos[f->n_gotos].label)
                                return -ENOMEM;
                        f->n_gotos++;
                } else if (streq(k->key, "LABEL") && op_is_assign(k->op)) {
                        unsigned *ll = realloc(f->label_lines, (f->n_labels + 1) * sizeof(unsigned));
                        if (!ll)
                                return -ENOMEM;
                        f->label_lines = ll;
                        f->label_lines[f->n_labels] = first;
                        if (strv_extend(&f->labels, k->value) < 0)
                                return -ENOMEM;
                        f->n_labels++;
                }
        }
        return 0;
}

typedef struct PendingList {
        PendingWriter *items;
        size_t n;
} PendingList;

/* The writers of one rule (at shown_path:first): its ATTR{} assignments of queue
 * knobs and the knobs its RUN programs name, appended to pend. The rule is
 * evaluated against the disk once, at its first writer. 0, or -errno. */
static int rule_pend_writers(const MatchCtx *c, const UdevRule *rule, const char *shown_path, unsigned first,
                             PendingList *pend) {
        bool evaluated = false;
        WriterMatch match = WRITER_MATCH_NO;
        _cleanup_free_ char *why = NULL;
        bool add = false, change = false;
        int r;

        for (size_t i = 0; i < rule->n; i++) {
                const UdevKey *k = &rule->keys[i];
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
                                        return -ENOMEM;
                        } else if (streq(k->key, "RUN")) {
                                if (!run_writes(k->value, &knob, &value, &pos))
                                        break;
                        } else
                                break;

                        if (pend->n >= FILE_WRITERS_MAX)
                                break; /* garbage, bounded: the first ones are reported */
                        if (!evaluated) {
                                r = udev_rule_eval(c, rule, &match, &why, &add, &change);
                                if (r < 0)
                                        return r;
                                evaluated = true;
                        }
                        if (asprintf_safe(&source, "%s:%u", shown_path, first) < 0)
                                return -ENOMEM;
                        np = realloc(pend->items, (pend->n + 1) * sizeof(PendingWriter));
                        if (!np)
                                return -ENOMEM;
                        pend->items = np;
                        pend->items[pend->n++] = (PendingWriter){
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
                        if (why && !pend->items[pend->n - 1].w.why)
                                return -ENOMEM;
                }
        }
        return 0;
}

static int rules_file_scan(const MatchCtx *c, const char *shown_path, const char *text, WriterList *out) {
        RulesFile f = {};
        PendingList pend = {};
        _cleanup_free_ char *logical = NULL;
        unsigned lineno = 0;
        const char *p = text;
        int r = 0;

        logical = malloc(LINE_MAX_LEN + 1);
        if (!logical)
                return -ENOMEM;

        while (*p) {
                unsigned first = lineno + 1;
                _cleanup_(udev_rule_done) UdevRule rule = {};

                if (!next_logical_line(&p, &lineno, logical))
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

                r = rules_file_note_gotos(&f, &rule, first);
                if (r < 0)
                        goto finish;
                r = rule_pend_writers(c, &rule, shown_path, first, &pend);
                if (r < 0)
                        goto finish;
        }

        /* With the whole file read, a GOTO jumping over a rule can be told. */
        for (size_t i = 0; i < pend.n; i++) {
                const GotoNote *g = pend.items[i].w.match != WRITER_MATCH_NO && !f.too_many_gotos
                                            ? goto_skipping(&f, pend.items[i].line)
                                            : NULL;
                if (g && writers_text_append(&pend.items[i].w.why, "GOTO=\"%s\" at line %u may skip it (not followed)",
                                             g->label, g->line) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = writer_add(out, &pend.items[i].w);
                if (r < 0)
                        goto finish;
        }
        r = 0;
finish:
        for (size_t i = 0; i < pend.n; i++) {
                free(pend.items[i].w.value);
                free(pend.items[i].w.source);
                free(pend.items[i].w.why);
        }
        free(pend.items);
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

int writers_udev_scan(const char *root, const MatchCtx *c, WriterList *out) {
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
