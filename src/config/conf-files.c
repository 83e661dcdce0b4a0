/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which files are read, in systemd's precedence (/etc over /run over the vendor
 * directory, masking with a symbolic link to /dev/null), and the permission
 * checks every directory and file passes first. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "config-internal.h"
#include "util.h"

void conf_files_done(ConfFiles *f) {
        assert(f);

        for (size_t i = 0; i < f->n; i++) {
                free(f->items[i].name);
                free(f->items[i].path);
        }
        free(f->items);
}

/* A symbolic link that resolves to /dev/null, however it is spelled
 * ("/dev/null", "../../dev/null", a link to a link to it), masks the name. */
static bool is_masked(const char *path) {
        _cleanup_free_ char *target = NULL;
        struct stat st;

        assert(path);

        if (lstat(path, &st) < 0 || !S_ISLNK(st.st_mode))
                return false;
        target = realpath(path, NULL);
        return target && streq(target, "/dev/null");
}

/* A directory configuration is read from: root's (see ynode_check_owner()). Each
 * directory once per load (`checked`), so a bad /etc/iotuned is one error, not one
 * per role. */
static int check_dir(const char *path, char ***checked, Diag *d) {
        struct stat st;

        assert(path);
        assert(checked);
        assert(d);

        if (strv_contains(*checked, path))
                return 0;
        if (strv_extend(checked, path) < 0)
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return 0; /* it was just read; gone meanwhile: nothing read from it */
        return ynode_check_owner(path, &st, d);
}

static int conf_files_add(ConfFiles *f, const char *name, const char *path, const char *text, bool masked) {
        ConfFile *n;

        assert(f);
        assert(path);
        assert(name);

        for (size_t i = 0; i < f->n; i++)
                if (streq(f->items[i].name, name))
                        return 0; /* a more important directory already has this name */
        n = realloc(f->items, (f->n + 1) * sizeof(ConfFile));
        if (!n)
                return -ENOMEM;
        f->items = n;
        n[f->n] = (ConfFile) { .name = strdup(name), .path = strdup(path), .text = text, .masked = masked };
        if (!n[f->n].name || !n[f->n].path) {
                free(n[f->n].name);
                free(n[f->n].path);
                return -ENOMEM;
        }
        f->n++;
        return 0;
}

static int cmp_conf_file(const void *a, const void *b) {
        assert(a);
        assert(b);

        return strcmp(((const ConfFile *) a)->name, ((const ConfFile *) b)->name);
}

/* Collect the *.yaml files of `subdir` (or the single file `single`) over all directories.
 * Hidden files (".name") are skipped, as systemd does; "*.yml" files are an error (a
 * likely typo that would otherwise be silently ignored); so is a file where the
 * directory should be. A directory something is read from, and for a subdirectory
 * the configuration directory above it, must pass ynode_check_owner(). -EINVAL
 * (with the diagnostic) when there are more than CONFIG_MAX_FILES files. */
int conf_files_collect(const ConfigPaths *paths, const char *subdir, const char *single, ConfFiles *out,
                   char ***checked, Diag *d) {
        int r;

        assert(paths);
        assert(out);
        assert(checked);
        assert(d);

        for (char **dir = paths->dirs; dir && *dir; dir++) {
                _cleanup_free_ char *base = subdir ? path_join(*dir, subdir) : strdup(*dir);
                bool dir_checked = false;
                DIR *dh;
                struct dirent *de;

                if (!base)
                        return -ENOMEM;
                /* check-config --as: the candidate comes first in its directory, so
                 * that it takes the place of a file there of its name (which is not
                 * read), and counts even when the directory does not exist yet. */
                if (paths->candidate_dir && streq(base, paths->candidate_dir) &&
                    (!single || streq(single, paths->candidate_name))) {
                        r = conf_files_add(out, paths->candidate_name, paths->candidate_file, NULL,
                                           is_masked(paths->candidate_file));
                        if (r < 0)
                                return r;
                        if (single)
                                continue;
                }
                if (single) {
                        _cleanup_free_ char *p = path_join(base, single);
                        struct stat st;
                        if (!p)
                                return -ENOMEM;
                        if (lstat(p, &st) < 0) {
                                if (errno == ENOTDIR)
                                        diag_add_file(d, base, "not a directory");
                                continue;
                        }
                        r = check_dir(base, checked, d);
                        if (r == -ENOMEM)
                                return r;
                        r = conf_files_add(out, single, p, NULL, is_masked(p));
                        if (r < 0)
                                return r;
                        continue;
                }
                dh = opendir(base);
                if (!dh) {
                        struct stat st;
                        int e = errno;
                        /* (a configuration directory that is a file was reported as
                         * such with the main file: stat() fails with ENOTDIR then) */
                        if (e == ENOTDIR) {
                                if (stat(base, &st) == 0)
                                        diag_add_file(d, base, "not a directory; expected a directory of *.yaml files");
                        } else if (e != ENOENT)
                                diag_add_file(d, base, "cannot read directory: %s", strerror(e));
                        continue;
                }
                while ((de = readdir(dh))) {
                        _cleanup_free_ char *p = NULL;
                        if (de->d_name[0] == '.')
                                continue;
                        if (str_endswith(de->d_name, ".yml")) {
                                p = path_join(base, de->d_name);
                                if (!p) {
                                        closedir(dh);
                                        return -ENOMEM;
                                }
                                diag_add_file(d, p, "only *.yaml files are read; rename it to %.*s.yaml (or move it "
                                              "away)", (int) (strlen(de->d_name) - 4), de->d_name);
                                continue;
                        }
                        if (!str_endswith(de->d_name, ".yaml"))
                                continue;
                        if (!dir_checked) {
                                dir_checked = true;
                                if (check_dir(*dir, checked, d) == -ENOMEM ||
                                    check_dir(base, checked, d) == -ENOMEM) {
                                        closedir(dh);
                                        return -ENOMEM;
                                }
                        }
                        p = path_join(base, de->d_name);
                        if (!p || conf_files_add(out, de->d_name, p, NULL, is_masked(p)) < 0) {
                                closedir(dh);
                                return -ENOMEM;
                        }
                        if (out->n > CONFIG_MAX_FILES) {
                                closedir(dh);
                                return diag_add_file(d, base, "more than %u files in %s/ (over all configuration "
                                                     "directories); refusing the configuration",
                                                     CONFIG_MAX_FILES, subdir);
                        }
                }
                closedir(dh);
        }

        if (paths->builtin)
                for (size_t i = 0; i < builtin_files_count; i++) {
                        const char *rel = builtin_files[i].path, *name = strrchr(rel, '/');
                        _cleanup_free_ char *shown = NULL;
                        name = name ? name + 1 : rel;
                        if (single ? !streq(rel, single)
                                   : !(subdir && str_startswith(rel, subdir) && rel[strlen(subdir)] == '/' &&
                                       !strchr(rel + strlen(subdir) + 1, '/')))
                                continue;
                        shown = path_join(BUILTIN_PREFIX, rel);
                        if (!shown || conf_files_add(out, name, shown, builtin_files[i].contents, false) < 0)
                                return -ENOMEM;
                }

        if (out->n > CONFIG_MAX_FILES)
                return diag_add(d, NULL, "more than %u files in %s/ (built-in ones included); refusing the "
                                "configuration", CONFIG_MAX_FILES, subdir);
        if (out->n > 1)
                qsort(out->items, out->n, sizeof(ConfFile), cmp_conf_file);
        return 0;
}

int conf_file_parse(const ConfFile *f, YNode **ret, Diag *d) {
        assert(ret);
        assert(f);
        assert(d);

        if (f->text)
                return ynode_parse_string(f->text, strlen(f->text), f->path, ret, d);
        return ynode_parse_file(f->path, ret, d);
}
