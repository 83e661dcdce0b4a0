/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "status.h"
#include "util.h"

static bool only_space(const char *s) {
        assert(s);

        return s[strspn(s, " \t\r\n")] == 0;
}

typedef struct Parser {
        char *error;
        bool oom;
} Parser;

/* Depth of nesting json-c accepts; status.json is 5 deep. */
#define STATUS_JSON_DEPTH 16

static int fail(Parser *p, const char *path, const char *fmt, ...) _printf_(3, 4);
static int fail(Parser *p, const char *path, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        va_list ap;
        int r;

        assert(p);
        assert(path);
        assert(fmt);

        va_start(ap, fmt);
        r = vasprintf(&what, fmt, ap);
        va_end(ap);
        if (r < 0 || asprintf_safe(&p->error, "%s: %s", isempty(path) ? "(document)" : path, what) < 0) {
                p->oom = true;
                return -ENOMEM;
        }
        return -EBADMSG;
}

/* "parent.key", or "key" at the top. */
static char *member_path(const char *parent, const char *key) {
        char *s = NULL;

        assert(parent);
        assert(key);

        (void) asprintf_safe(&s, "%s%s%s", parent, isempty(parent) ? "" : ".", key);
        return s;
}

static char *index_path(const char *parent, size_t i) {
        char *s = NULL;

        assert(parent);

        (void) asprintf_safe(&s, "%s[%zu]", parent, i);
        return s;
}

typedef enum Want {
        WANT_REQUIRED = 0,      /* present and of the type */
        WANT_OPTIONAL = 1 << 0, /* may be absent */
        WANT_NULLABLE = 1 << 1, /* may be null */
} Want;

static const char *type_words(json_type t) {
        switch (t) {
        case json_type_object: return "an object";
        case json_type_array: return "an array";
        case json_type_string: return "a string";
        case json_type_int: return "an integer";
        case json_type_boolean: return "a boolean";
        default: return "a value";
        }
}

/* *ret = the member, or NULL when absent/null and allowed. */
static int get_typed(Parser *p, json_object *o, const char *path, const char *key, json_type type, Want want,
                     json_object **ret) {
        _cleanup_free_ char *mp = member_path(path, key);
        json_object *v = NULL;

        assert(p);
        assert(path);
        assert(key);
        assert(ret);

        if (!mp)
                return p->oom = true, -ENOMEM;
        *ret = NULL;
        if (!json_object_object_get_ex(o, key, &v))
                return (want & WANT_OPTIONAL) ? 0 : fail(p, mp, "missing");
        if (!v) /* json-c stores null as a NULL member */
                return (want & WANT_NULLABLE) ? 0 : fail(p, mp, "expected %s, not null", type_words(type));
        if (!json_object_is_type(v, type))
                return fail(p, mp, "expected %s", type_words(type));
        *ret = v;
        return 0;
}

static int get_string(Parser *p, json_object *o, const char *path, const char *key, Want want, const char **ret) {
        json_object *v;
        int r = get_typed(p, o, path, key, json_type_string, want, &v);

        assert(p);
        assert(path);
        assert(key);
        assert(ret);

        if (r < 0)
                return r;
        *ret = v ? json_object_get_string(v) : NULL;
        return 0;
}

static int get_uint(Parser *p, json_object *o, const char *path, const char *key, Want want, unsigned max,
                    unsigned *ret) {
        json_object *v;
        int64_t i;
        int r = get_typed(p, o, path, key, json_type_int, want, &v);

        assert(p);
        assert(path);
        assert(key);
        assert(ret);

        if (r < 0)
                return r;
        if (!v)
                return 0;
        errno = 0;
        i = json_object_get_int64(v);
        if (i < 0 || (uint64_t) i > max || errno != 0) {
                _cleanup_free_ char *mp = member_path(path, key);
                return mp ? fail(p, mp, "expected an integer from 0 to %u", max) : (p->oom = true, -ENOMEM);
        }
        *ret = (unsigned) i;
        return 0;
}

static int get_bool(Parser *p, json_object *o, const char *path, const char *key, Want want, int *ret) {
        json_object *v;
        int r = get_typed(p, o, path, key, json_type_boolean, want, &v);

        assert(p);
        assert(path);
        assert(key);
        assert(ret);

        if (r < 0)
                return r;
        *ret = v ? json_object_get_boolean(v) : -1;
        return 0;
}

static int parse_nvme(Parser *p, json_object *n, const char *path, StatusNvme *ret) {
        json_object *maps;
        int r;

        assert(p);
        assert(path);
        assert(ret);

        if ((r = get_string(p, n, path, "controller", WANT_OPTIONAL | WANT_NULLABLE, &ret->controller)) < 0 ||
            (r = get_string(p, n, path, "address", WANT_OPTIONAL | WANT_NULLABLE, &ret->address)) < 0 ||
            (r = get_string(p, n, path, "transport", WANT_OPTIONAL | WANT_NULLABLE, &ret->transport)) < 0 ||
            (r = get_string(p, n, path, "model", WANT_OPTIONAL | WANT_NULLABLE, &ret->model)) < 0 ||
            (r = get_string(p, n, path, "firmware", WANT_OPTIONAL | WANT_NULLABLE, &ret->firmware)) < 0 ||
            (r = get_bool(p, n, path, "apst_supported", WANT_OPTIONAL | WANT_NULLABLE, &ret->apst_supported)) < 0 ||
            (r = get_typed(p, n, path, "queue_maps", json_type_object, WANT_OPTIONAL | WANT_NULLABLE, &maps)) < 0)
                return r;
        if (maps) {
                _cleanup_free_ char *mp = member_path(path, "queue_maps");
                if (!mp)
                        return p->oom = true, -ENOMEM;
                if ((r = get_uint(p, maps, mp, "default", WANT_REQUIRED, 65535, &ret->maps_default)) < 0 ||
                    (r = get_uint(p, maps, mp, "read", WANT_REQUIRED, 65535, &ret->maps_read)) < 0 ||
                    (r = get_uint(p, maps, mp, "poll", WANT_REQUIRED, 65535, &ret->maps_poll)) < 0)
                        return r;
                ret->has_maps = true;
        }
        return 0;
}

static int parse_path(Parser *p, json_object *o, const char *path, StatusPath *ret) {
        int r;

        assert(p);
        assert(path);
        assert(ret);

        if ((r = get_string(p, o, path, "head", WANT_REQUIRED, &ret->head)) < 0 ||
            (r = get_string(p, o, path, "controller", WANT_OPTIONAL | WANT_NULLABLE, &ret->controller)) < 0 ||
            (r = get_string(p, o, path, "state", WANT_OPTIONAL | WANT_NULLABLE, &ret->state)) < 0 ||
            (r = get_string(p, o, path, "ana_state", WANT_OPTIONAL | WANT_NULLABLE, &ret->ana_state)) < 0)
                return r;
        return 0;
}

/* The state names are the writer's (setting_state_to_string): one vocabulary. */
static int get_state(Parser *p, json_object *o, const char *path, const char *key, SettingState *ret) {
        const char *name;
        int r = get_string(p, o, path, key, WANT_REQUIRED, &name);

        assert(p);
        assert(path);
        assert(key);
        assert(ret);

        if (r < 0)
                return r;
        for (SettingState s = 0; s < _STATE_MAX; s++)
                if (streq(name, setting_state_to_string(s))) {
                        *ret = s;
                        return 0;
                }
        _cleanup_free_ char *mp = member_path(path, key);
        return mp ? fail(p, mp, "unknown state \"%s\"", name) : (p->oom = true, -ENOMEM);
}

static int parse_setting(Parser *p, json_object *e, const char *path, StatusSetting *ret) {
        int conflict = -1, r;

        assert(path);

        assert(p);
        assert(ret);

        if (!json_object_is_type(e, json_type_object))
                return fail(p, path, "expected an object");
        if ((r = get_string(p, e, path, "knob", WANT_REQUIRED, &ret->knob)) < 0 ||
            (r = get_string(p, e, path, "object", WANT_OPTIONAL | WANT_NULLABLE, &ret->object)) < 0 ||
            (r = get_state(p, e, path, "state", &ret->state)) < 0 ||
            (r = get_string(p, e, path, "effective", WANT_OPTIONAL | WANT_NULLABLE, &ret->effective)) < 0 ||
            (r = get_string(p, e, path, "observed", WANT_OPTIONAL | WANT_NULLABLE, &ret->observed)) < 0 ||
            (r = get_string(p, e, path, "note", WANT_OPTIONAL | WANT_NULLABLE, &ret->note)) < 0 ||
            (r = get_uint(p, e, path, "drifts", WANT_OPTIONAL, UINT_MAX, &ret->drifts)) < 0 ||
            (r = get_string(p, e, path, "writer", WANT_OPTIONAL | WANT_NULLABLE, &ret->writer)) < 0 ||
            (r = get_bool(p, e, path, "conflict", WANT_OPTIONAL, &conflict)) < 0)
                return r;
        ret->conflict = conflict > 0;
        return 0;
}

static int parse_finding(Parser *p, json_object *e, const char *path, StatusFinding *ret) {
        int r;

        assert(p);
        assert(path);
        assert(ret);

        if (!json_object_is_type(e, json_type_object))
                return fail(p, path, "expected an object");
        if ((r = get_string(p, e, path, "kind", WANT_REQUIRED, &ret->kind)) < 0 ||
            (r = get_string(p, e, path, "severity", WANT_REQUIRED, &ret->severity)) < 0 ||
            (r = get_string(p, e, path, "knob", WANT_OPTIONAL | WANT_NULLABLE, &ret->knob)) < 0 ||
            (r = get_string(p, e, path, "summary", WANT_REQUIRED, &ret->summary)) < 0)
                return r;
        return 0;
}

static int parse_device(Parser *p, json_object *d, const char *path, StatusDevice *ret) {
        json_object *settings, *findings = NULL, *facts, *nvme = NULL, *mpath = NULL;
        int excluded = -1, r;

        assert(p);
        assert(path);
        assert(ret);

        if (!json_object_is_type(d, json_type_object))
                return fail(p, path, "expected an object");
        if ((r = get_string(p, d, path, "device", WANT_REQUIRED, &ret->device)) < 0 ||
            (r = get_string(p, d, path, "profile", WANT_OPTIONAL | WANT_NULLABLE, &ret->profile)) < 0 ||
            (r = get_string(p, d, path, "rule", WANT_OPTIONAL | WANT_NULLABLE, &ret->rule)) < 0 ||
            (r = get_string(p, d, path, "error", WANT_OPTIONAL | WANT_NULLABLE, &ret->error)) < 0 ||
            (r = get_bool(p, d, path, "excluded", WANT_OPTIONAL, &excluded)) < 0 ||
            (r = get_typed(p, d, path, "facts", json_type_object, WANT_OPTIONAL | WANT_NULLABLE, &facts)) < 0 ||
            (r = get_typed(p, d, path, "settings", json_type_array, WANT_OPTIONAL, &settings)) < 0 ||
            (r = get_typed(p, d, path, "findings", json_type_array, WANT_OPTIONAL, &findings)) < 0)
                return r;
        ret->excluded = excluded > 0;
        if (facts) {
                _cleanup_free_ char *fp = member_path(path, "facts"), *np = NULL;
                if (!fp)
                        return p->oom = true, -ENOMEM;
                r = get_typed(p, facts, fp, "nvme", json_type_object, WANT_OPTIONAL | WANT_NULLABLE, &nvme);
                if (r < 0)
                        return r;
                if (nvme) {
                        np = member_path(fp, "nvme");
                        ret->nvme = calloc(1, sizeof(StatusNvme));
                        if (!np || !ret->nvme)
                                return p->oom = true, -ENOMEM;
                        ret->nvme->apst_supported = -1;
                        r = parse_nvme(p, nvme, np, ret->nvme);
                        if (r < 0)
                                return r;
                }
                r = get_typed(p, facts, fp, "multipath_path", json_type_object, WANT_OPTIONAL | WANT_NULLABLE, &mpath);
                if (r < 0)
                        return r;
                if (mpath) {
                        _cleanup_free_ char *pp = member_path(fp, "multipath_path");
                        ret->path = calloc(1, sizeof(StatusPath));
                        if (!pp || !ret->path)
                                return p->oom = true, -ENOMEM;
                        r = parse_path(p, mpath, pp, ret->path);
                        if (r < 0)
                                return r;
                }
        }
        if (settings) {
                size_t n = json_object_array_length(settings);
                ret->settings = calloc(n ?: 1, sizeof(StatusSetting));
                if (!ret->settings)
                        return p->oom = true, -ENOMEM;
                for (size_t k = 0; k < n; k++) {
                        _cleanup_free_ char *sp = member_path(path, "settings"), *ep = NULL;
                        ep = sp ? index_path(sp, k) : NULL;
                        if (!ep)
                                return p->oom = true, -ENOMEM;
                        r = parse_setting(p, json_object_array_get_idx(settings, k), ep, &ret->settings[k]);
                        if (r < 0)
                                return r;
                        ret->n_settings++;
                }
        }
        if (findings) {
                size_t n = json_object_array_length(findings);
                ret->findings = calloc(n ?: 1, sizeof(StatusFinding));
                if (!ret->findings)
                        return p->oom = true, -ENOMEM;
                for (size_t k = 0; k < n; k++) {
                        _cleanup_free_ char *fp = member_path(path, "findings"), *ep = NULL;
                        ep = fp ? index_path(fp, k) : NULL;
                        if (!ep)
                                return p->oom = true, -ENOMEM;
                        r = parse_finding(p, json_object_array_get_idx(findings, k), ep, &ret->findings[k]);
                        if (r < 0)
                                return r;
                        ret->n_findings++;
                }
        }
        return 0;
}

void status_done(Status *s) {
        assert(s);

        for (size_t i = 0; i < s->n_devices; i++) {
                free(s->devices[i].settings);
                free(s->devices[i].findings);
                free(s->devices[i].nvme);
                free(s->devices[i].path);
        }
        free(s->devices);
        json_object_put(s->root);
        *s = (Status) {};
}

int status_parse(const char *text, Status *ret, char **ret_error) {
        Parser p = {};
        Status s = {};

        assert(text);
        assert(ret);

        json_tokener *tok;
        json_object *daemon, *devs, *ib, *pid;
        int r;

        tok = json_tokener_new_ex(STATUS_JSON_DEPTH);
        if (!tok)
                return -ENOMEM;
        /* -1: up to the NUL, which also ends a bare number or literal. */
        s.root = only_space(text) ? NULL : json_tokener_parse_ex(tok, text, -1);
        /* With -1 the terminating NUL may count as parsed: never look past it. */
        if (!s.root || json_tokener_get_error(tok) != json_tokener_success ||
            !only_space(text + MIN(json_tokener_get_parse_end(tok), strlen(text)))) {
                enum json_tokener_error e = json_tokener_get_error(tok);
                size_t at = MIN(json_tokener_get_parse_end(tok), strlen(text));
                json_tokener_free(tok);
                if (only_space(text))
                        r = fail(&p, "", "empty");
                else if (e != json_tokener_success)
                        r = fail(&p, "", "not JSON (%s at byte %zu)", json_tokener_error_desc(e), at);
                else if (s.root)
                        r = fail(&p, "", "trailing data at byte %zu", at);
                else
                        r = fail(&p, "", "expected an object, not null");
                goto finish;
        }
        json_tokener_free(tok);

        if (!json_object_is_type(s.root, json_type_object)) {
                r = fail(&p, "", "expected an object");
                goto finish;
        }
        if ((r = get_typed(&p, s.root, "", "daemon", json_type_object, WANT_REQUIRED, &daemon)) < 0 ||
            (r = get_typed(&p, s.root, "", "devices", json_type_array, WANT_REQUIRED, &devs)) < 0 ||
            (r = get_typed(&p, daemon, "daemon", "pid", json_type_int, WANT_REQUIRED, &pid)) < 0 ||
            (r = get_uint(&p, daemon, "daemon", "drifts_corrected", WANT_OPTIONAL, UINT_MAX, &s.drifts_corrected)) < 0 ||
            (r = get_uint(&p, daemon, "daemon", "conflicts", WANT_OPTIONAL, UINT_MAX, &s.conflicts)) < 0 ||
            (r = get_typed(&p, daemon, "daemon", "irqbalance", json_type_object, WANT_OPTIONAL | WANT_NULLABLE, &ib)) < 0)
                goto finish;
        {
                int64_t v = json_object_get_int64(pid);
                /* 0 or negative: the caller reports a status file left over. */
                s.pid = v > INT_MAX ? -1 : v < 0 ? -1 : (int) v;
        }
        s.has_drifts_corrected = json_object_object_get_ex(daemon, "drifts_corrected", NULL);
        if (ib && (r = get_string(&p, ib, "daemon.irqbalance", "state", WANT_OPTIONAL | WANT_NULLABLE,
                                  &s.irqbalance_state)) < 0)
                goto finish;

        {
                size_t n = json_object_array_length(devs);
                s.devices = calloc(n ?: 1, sizeof(StatusDevice));
                if (!s.devices) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *dp = index_path("devices", i);
                        if (!dp) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        s.n_devices++; /* so that status_done() frees what parse_device() allocated */
                        r = parse_device(&p, json_object_array_get_idx(devs, i), dp, &s.devices[i]);
                        if (r < 0)
                                goto finish;
                }
        }
        r = 0;
finish:
        if (r < 0 || p.oom) {
                status_done(&s);
                if (p.oom || r == -ENOMEM) {
                        free(p.error);
                        return -ENOMEM;
                }
                if (ret_error)
                        *ret_error = TAKE_PTR(p.error);
                free(p.error);
                return -EBADMSG;
        }
        *ret = s;
        return 0;
}
