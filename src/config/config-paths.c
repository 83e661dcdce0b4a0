/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the configuration is read from: the search path under a root, or one --config
 * directory; and the candidate file of check-config --as. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "util.h"

static void candidate_clear(ConfigPaths *p) {
        free(p->candidate_dir);
        free(p->candidate_name);
        free(p->candidate_file);
        p->candidate_dir = p->candidate_name = p->candidate_file = NULL;
}

void config_paths_done(ConfigPaths *p) {
        assert(p);

        p->dirs = strv_free(p->dirs);
        candidate_clear(p);
}

int config_paths_default(const char *root, const char *config_dir, ConfigPaths *ret) {
        static const char *const std[] = { IOTUNED_ETC_DIR, IOTUNED_RUN_DIR, IOTUNED_VENDOR_DIR };
        ConfigPaths p = { .builtin = true };

        assert(ret);

        if (config_dir) {
                if (strv_extend(&p.dirs, config_dir) < 0)
                        return -ENOMEM;
        } else
                for (size_t i = 0; i < ELEMENTSOF(std); i++) {
                        char *d = path_join(root && !streq(root, "/") ? root : "", std[i]);
                        if (!d || strv_push(&p.dirs, d) < 0) {
                                config_paths_done(&p);
                                return -ENOMEM;
                        }
                }
        *ret = p;
        return 0;
}

/* `s` with "//" as "/", no "./" components and no trailing "/"; NULL on OOM. A
 * ".." component is refused before this is called, so nothing is resolved. */
static char *path_tidy(const char *s) {
        char *t = malloc(strlen(s) + 1), *o = t;

        if (!t)
                return NULL;
        while (*s) {
                if (s[0] == '.' && (s[1] == '/' || s[1] == 0) && (o == t || o[-1] == '/')) {
                        s += s[1] ? 2 : 1;
                        continue;
                }
                if (*s == '/' && o > t && o[-1] == '/') {
                        s++;
                        continue;
                }
                *o++ = *s++;
        }
        while (o > t + 1 && o[-1] == '/')
                o--;
        *o = 0;
        return t;
}

static bool has_dotdot(const char *s) {
        for (const char *c = s; (c = strstr(c, "..")); c += 2)
                if ((c == s || c[-1] == '/') && (c[2] == '/' || c[2] == 0))
                        return true;
        return false;
}

int config_paths_set_candidate(ConfigPaths *p, const char *root, const char *path, const char *file,
                               const char **ret_why) {
        _cleanup_free_ char *joined = NULL, *target = NULL;
        char *slash, *name;

        assert(p);
        assert(path);
        assert(file);
        assert(ret_why);

        candidate_clear(p);
        if (isempty(path) || isempty(file)) {
                *ret_why = "an empty path";
                return -EINVAL;
        }
        if (has_dotdot(path)) {
                *ret_why = "a path with a '..' component (name the place itself)";
                return -EINVAL;
        }
        /* The same root as the search path: with --root, PATH is inside it. */
        joined = path[0] == '/' && root && !streq(root, "/") && !isempty(root) ? path_join(root, path) : strdup(path);
        target = joined ? path_tidy(joined) : NULL;
        if (!target)
                return -ENOMEM;
        slash = strrchr(target, '/');
        if (!slash)
                goto not_a_place;
        name = slash + 1;
        if (name[0] == '.' || !str_endswith(name, ".yaml") || streq(name, ".yaml")) {
                *ret_why = "not a *.yaml file name (hidden files and other names are never read)";
                return -EINVAL;
        }
        *slash = 0; /* target is now the directory ("" for one in /) */
        for (char **d = p->dirs; d && *d; d++) {
                _cleanup_free_ char *dir = path_tidy(*d);
                const char *sub;

                if (!dir)
                        return -ENOMEM;
                if (!str_startswith(target, dir))
                        continue;
                sub = target + strlen(dir);
                if (*sub == 0 && streq(name, MAIN_CONFIG))
                        ;
                else if (!(*sub == '/' && (streq(sub + 1, DROPIN_DIR) || streq(sub + 1, PROFILE_DIR))))
                        continue;
                /* as conf_files_collect() spells the directory it reads */
                p->candidate_dir = *sub == 0 ? strdup(*d) : path_join(*d, sub + 1);
                p->candidate_name = strdup(name);
                p->candidate_file = strdup(file);
                if (!p->candidate_dir || !p->candidate_name || !p->candidate_file) {
                        candidate_clear(p);
                        return -ENOMEM;
                }
                return 0;
        }
not_a_place:
        *ret_why = "not a place configuration is read from: the main file " MAIN_CONFIG ", a drop-in in "
                   DROPIN_DIR "/ or a profile in " PROFILE_DIR "/ of a configuration directory";
        return -EINVAL;
}
