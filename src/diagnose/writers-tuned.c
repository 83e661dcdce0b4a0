/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writers: the active TuneD profile(s), with their includes, and the entries of
 * them that write a disk's knobs. */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knob.h"
#include "macro.h"
#include "rootfs.h"
#include "util.h"
#include "writers-internal.h"

#define TUNED_INCLUDE_DEPTH 8        /* include= nesting, against loops */
#define TUNED_PROFILES_MAX 8         /* names in active_profile */
#define TUNED_LOADS_MAX 32           /* tuned.conf files read per name in active_profile (include= fans out) */
#define TUNED_OPTS_MAX 1024          /* options kept per section; more are ignored (linear lookups) */

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
        const char *dp = writers_devpath_of(d->syspath);

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

int writers_tuned_scan(const char *root, const Device *d, const Procs *procs, WriterList *out) {
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
