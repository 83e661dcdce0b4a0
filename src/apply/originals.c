/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <json-c/json.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "originals.h"
#include "util.h"

#define ORIGINALS_VERSION 1

static char *record_path(const char *dir, const char *name) {
        char *p = NULL;
        (void) asprintf_safe(&p, "%s/%s.json", dir, name);
        return p;
}

static int load_json(const char *dir, const char *name, json_object **ret) {
        _cleanup_free_ char *p = record_path(dir, name), *text = NULL;
        json_object *j;
        int r;

        if (!p)
                return -ENOMEM;
        r = read_full_file(p, 1u << 20, &text);
        if (r < 0)
                return r;
        j = json_tokener_parse(text);
        if (!j || !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return -EBADMSG;
        }
        *ret = j;
        return 0;
}

static bool record_matches(json_object *j, const Device *d) {
        json_object *seq = NULL;
        const char *s;
        if (!json_object_object_get_ex(j, "diskseq", &seq) || json_object_is_type(seq, json_type_null))
                return d->diskseq == NULL;
        s = json_object_get_string(seq);
        return d->diskseq && s && streq(s, d->diskseq);
}

int originals_record(const char *dir, const Device *d) {
        json_object *old = NULL, *root, *values;
        const char *text;
        _cleanup_free_ char *p = NULL;
        int r;

        if (load_json(dir, d->name, &old) == 0) {
                bool same = record_matches(old, d);
                json_object_put(old);
                if (same)
                        return 0;
        }

        root = json_object_new_object();
        values = json_object_new_object();
        if (!root || !values) {
                json_object_put(root);
                json_object_put(values);
                return -ENOMEM;
        }
        json_object_object_add(root, "version", json_object_new_int(ORIGINALS_VERSION));
        json_object_object_add(root, "device", json_object_new_string(d->name));
        json_object_object_add(root, "syspath", json_object_new_string(d->syspath));
        json_object_object_add(root, "diskseq", d->diskseq ? json_object_new_string(d->diskseq) : NULL);
        json_object_object_add(root, "recorded_realtime", json_object_new_int64((int64_t) time(NULL)));
        for (size_t k = 0; k < _KNOB_MAX; k++) {
                const Knob *kn = &knob_table[k];
                _cleanup_free_ char *raw = NULL, *norm = NULL;
                if (kn->needs_mq && !d->has_mq)
                        continue;
                /* Unreadable knobs (no WBT on this queue, old kernels) have nothing to restore. */
                if (read_attr_at(d->syspath, kn->attr, &raw) < 0 || kn->normalize(raw, &norm) < 0)
                        continue;
                json_object_object_add(values, kn->name, json_object_new_string(norm));
        }
        json_object_object_add(root, "values", values);

        p = record_path(dir, d->name);
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        r = p && text ? write_file_atomic(p, text, strlen(text)) : -ENOMEM;
        json_object_put(root);
        return r;
}

int originals_load(const char *dir, const Device *d, char *values[_KNOB_MAX]) {
        json_object *j = NULL, *vals;
        int r;

        for (size_t k = 0; k < _KNOB_MAX; k++)
                values[k] = NULL;
        r = load_json(dir, d->name, &j);
        if (r < 0)
                return r;
        if (!record_matches(j, d)) {
                json_object_put(j);
                return -ESTALE;
        }
        if (json_object_object_get_ex(j, "values", &vals) && json_object_is_type(vals, json_type_object))
                for (size_t k = 0; k < _KNOB_MAX; k++) {
                        json_object *v;
                        if (!json_object_object_get_ex(vals, knob_table[k].name, &v))
                                continue;
                        values[k] = strdup(json_object_get_string(v));
                        if (!values[k]) {
                                for (size_t i = 0; i < k; i++)
                                        free(values[i]);
                                json_object_put(j);
                                return -ENOMEM;
                        }
                }
        json_object_put(j);
        return 0;
}

int originals_list(const char *dir, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        DIR *dh = opendir(dir);
        struct dirent *de;

        if (!dh) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return negative_errno();
        }
        while ((de = readdir(dh))) {
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".json"))
                        continue;
                char *n = strndup(de->d_name, strlen(de->d_name) - strlen(".json"));
                if (!n || strv_push(&l, n) < 0) {
                        closedir(dh);
                        return -ENOMEM;
                }
        }
        closedir(dh);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int originals_forget(const char *dir, const char *name) {
        _cleanup_free_ char *p = record_path(dir, name);
        if (!p)
                return -ENOMEM;
        if (unlink(p) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}
