/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Configuration loading: precedence, drop-ins, masking, inheritance, and the
 * corpus of malformed files under tests/fixtures/config-bad/, each of which must
 * produce exactly the diagnostics in its `expected` file. */
#include <dirent.h>

#include "config.h"
#include "tests.h"
#include "tmpdir.h"

static Config *load(char **dirs, bool builtin, Diag *d) {
        ConfigPaths p = { .dirs = dirs, .builtin = builtin };
        Config *c = NULL;
        return config_load(&p, &c, d) < 0 ? NULL : c;
}

static char *diag_text(const Diag *d, const char *strip) {
        char *buf = NULL, *out;
        size_t size = 0, n = strlen(strip);
        FILE *f = open_memstream(&buf, &size);
        diag_print(d, f);
        fclose(f);
        /* Show paths relative to the case directory. */
        out = calloc(1, size + 1);
        for (char *s = buf, *o = out; *s;)
                if (strncmp(s, strip, n) == 0)
                        s += n;
                else
                        *o++ = *s++;
        free(buf);
        return out;
}

TEST(builtin_defaults_without_any_file) {
        Diag d = {};
        char *dir = tmpdir_new();
        char *dirs[] = { dir, NULL };
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        ASSERT_STREQ(c->default_profile, "mixed");
        ASSERT_INT_EQ(c->n_profiles, 3);
        ASSERT_INT_EQ(c->n_rules, 2);
        ASSERT_STREQ(c->rules[0].name, "nvme");
        ASSERT_STREQ(config_find_profile(c, "latency")->path, "<builtin>/profiles/latency.yaml");
        ASSERT_STREQ(config_find_profile(c, "latency")->resolved[KNOB_SCHEDULER].value, "none");
        ASSERT_TRUE(!c->discover[DISCOVERY_LOOP]);
        config_free(c);
        tmpdir_remove(dir);
}

TEST(etc_overrides_vendor_by_file_name) {
        Diag d = {};
        char *etc = tmpdir_new(), *vendor = tmpdir_new();
        char *dirs[] = { etc, vendor, NULL };
        tmpdir_write(vendor, "profiles/latency.yaml", "queue:\n  nr_requests: 64\n");
        tmpdir_write(etc, "profiles/latency.yaml", "queue:\n  nr_requests: 128\n");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        const Profile *p = config_find_profile(c, "latency");
        ASSERT_STREQ(p->resolved[KNOB_NR_REQUESTS].value, "128");
        ASSERT_TRUE(strncmp(p->path, etc, strlen(etc)) == 0);
        /* the whole file is replaced, not merged: the builtin scheduler is gone */
        ASSERT_TRUE(p->resolved[KNOB_SCHEDULER].value == NULL);
        config_free(c);
        tmpdir_remove(etc);
        tmpdir_remove(vendor);
}

TEST(dropins_in_name_order_later_wins) {
        Diag d = {};
        char *etc = tmpdir_new(), *vendor = tmpdir_new();
        char *dirs[] = { etc, vendor, NULL };
        tmpdir_write(vendor, "iotuned.yaml",
                     "default_profile: mixed\nrules:\n  - name: main\n    match: {kernel: 'sd*'}\n    profile: throughput\n");
        tmpdir_write(vendor, "iotuned.yaml.d/20-b.yaml",
                     "default_profile: throughput\nrules:\n  - name: b\n    match: {}\n    profile: mixed\n");
        tmpdir_write(etc, "iotuned.yaml.d/10-a.yaml",
                     "default_profile: latency\nrules:\n  - name: a\n    match: {kernel: 'nvme*'}\n    profile: latency\n");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        ASSERT_STREQ(c->default_profile, "throughput");
        ASSERT_INT_EQ(c->n_rules, 3);
        /* later files' rules are tried first */
        ASSERT_STREQ(c->rules[0].name, "b");
        ASSERT_STREQ(c->rules[1].name, "a");
        ASSERT_STREQ(c->rules[2].name, "main");
        ASSERT_INT_EQ(strv_length(c->files), 3 + 3);
        config_free(c);
        tmpdir_remove(etc);
        tmpdir_remove(vendor);
}

TEST(empty_rules_list_resets) {
        Diag d = {};
        char *etc = tmpdir_new();
        char *dirs[] = { etc, NULL };
        tmpdir_write(etc, "iotuned.yaml.d/90-none.yaml", "rules: []\n");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        ASSERT_INT_EQ(c->n_rules, 0);
        config_free(c);
        tmpdir_remove(etc);
}

TEST(dev_null_masks) {
        Diag d = {};
        char *etc = tmpdir_new(), *vendor = tmpdir_new();
        char *dirs[] = { etc, vendor, NULL };
        tmpdir_write(vendor, "iotuned.yaml.d/10-a.yaml", "default_profile: latency\n");
        tmpdir_symlink(etc, "iotuned.yaml.d/10-a.yaml", "/dev/null");
        tmpdir_symlink(etc, "iotuned.yaml", "/dev/null");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        /* the masked main file takes the builtin rules with it; masked drop-in ignored */
        ASSERT_INT_EQ(c->n_rules, 0);
        ASSERT_STREQ(c->default_profile, "mixed");
        ASSERT_INT_EQ(strv_length(c->masked), 2);
        config_free(c);
        tmpdir_remove(etc);
        tmpdir_remove(vendor);
}

TEST(extends_inherits_with_origins) {
        Diag d = {};
        char *etc = tmpdir_new();
        char *dirs[] = { etc, NULL };
        tmpdir_write(etc, "profiles/db.yaml",
                     "name: db\ndescription: database\nextends: latency\nqueue:\n  nr_requests: 64\n");
        tmpdir_write(etc, "profiles/db-ssd.yaml", "extends: db\nqueue:\n  read_ahead_kb: 16\n");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        const Profile *p = config_find_profile(c, "db-ssd");
        ASSERT_STREQ(p->resolved[KNOB_READ_AHEAD_KB].value, "16");
        ASSERT_STREQ(p->resolved[KNOB_NR_REQUESTS].value, "64");
        ASSERT_INT_EQ(p->resolved[KNOB_NR_REQUESTS].origin.line, 5);
        ASSERT_INT_EQ(p->resolved[KNOB_NR_REQUESTS].origin.column, 16);
        ASSERT_TRUE(strstr(p->resolved[KNOB_NR_REQUESTS].origin.file, "profiles/db.yaml") != NULL);
        ASSERT_STREQ(p->resolved[KNOB_SCHEDULER].value, "none");
        ASSERT_STREQ(p->resolved[KNOB_SCHEDULER].origin.file, "<builtin>/profiles/latency.yaml");
        config_free(c);
        tmpdir_remove(etc);
}

TEST(rule_set_overrides_and_match_fields) {
        Diag d = {};
        char *etc = tmpdir_new();
        char *dirs[] = { etc, NULL };
        tmpdir_write(etc, "iotuned.yaml",
                     "rules:\n"
                     "  - match:\n"
                     "      transport: pcie\n"
                     "      model: 'Samsung*'\n"
                     "      rotational: false\n"
                     "      numa_node: 1\n"
                     "      size: { min: 100G, max: 4T }\n"
                     "      udev: { ID_PATH: 'pci-0000:3b:00.0-nvme-1' }\n"
                     "    profile: latency\n"
                     "    set: { queue: { nr_requests: 256 } }\n"
                     "  - match: { kernel: 'loop*' }\n"
                     "    exclude: true\n");
        Config *c = load(dirs, true, &d);
        ASSERT_TRUE(c);
        ASSERT_INT_EQ(c->n_rules, 2);
        const Rule *r = &c->rules[0];
        ASSERT_TRUE(strstr(r->name, "iotuned.yaml:2") != NULL);
        ASSERT_STREQ(r->match.transport, "pcie");
        ASSERT_INT_EQ(r->match.rotational, TRI_FALSE);
        ASSERT_INT_EQ(r->match.numa_node, 1);
        ASSERT_TRUE(r->match.size_min == 100ULL << 30 && r->match.size_max == 4ULL << 40);
        ASSERT_STREQ(r->match.udev[0].key, "ID_PATH");
        ASSERT_STREQ(r->set[KNOB_NR_REQUESTS].value, "256");
        ASSERT_TRUE(c->rules[1].exclude);
        config_free(c);
        tmpdir_remove(etc);
}

TEST(malformed_corpus) {
        const char *root = getenv("IOTUNED_TEST_FIXTURES");
        char *corpus = NULL;
        struct dirent *de;
        DIR *dh;
        int cases = 0;

        ASSERT_TRUE(root);
        ASSERT_TRUE(asprintf(&corpus, "%s/config-bad", root) > 0);
        dh = opendir(corpus);
        ASSERT_TRUE(dh);
        while ((de = readdir(dh))) {
                char *casedir = NULL, *expected = NULL, *strip = NULL, *got;
                char *dirs[2];
                Diag d = {};
                Config *c;

                if (de->d_name[0] == '.')
                        continue;
                ASSERT_TRUE(asprintf(&casedir, "%s/%s", corpus, de->d_name) > 0);
                ASSERT_TRUE(asprintf(&strip, "%s/", casedir) > 0);
                ASSERT_INT_EQ(read_attr_at(casedir, "expected", &expected), 0);
                dirs[0] = casedir;
                dirs[1] = NULL;
                c = load(dirs, true, &d);
                got = diag_text(&d, strip);
                /* trailing newline of the last diagnostic vs read_attr's stripping */
                if (*got && got[strlen(got) - 1] == '\n')
                        got[strlen(got) - 1] = 0;
                if (c || strcmp(got, expected) != 0) {
                        fprintf(stderr, "# case %s: %s\n# got:\n%s\n# expected:\n%s\n", de->d_name,
                                c ? "loaded although it is invalid" : "diagnostics differ", got, expected);
                        test_failed_flag = 1;
                }
                config_free(c);
                diag_done(&d);
                free(got);
                free(expected);
                free(strip);
                free(casedir);
                cases++;
        }
        closedir(dh);
        free(corpus);
        /* The corpus must not silently vanish. */
        ASSERT_TRUE(cases >= 15);
}

TEST_MAIN(T(builtin_defaults_without_any_file), T(etc_overrides_vendor_by_file_name),
          T(dropins_in_name_order_later_wins), T(empty_rules_list_resets), T(dev_null_masks),
          T(extends_inherits_with_origins), T(rule_set_overrides_and_match_fields), T(malformed_corpus))
