/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Configuration loading: precedence, drop-ins, masking, inheritance, and the
 * corpus of malformed files under tests/fixtures/config-bad/, each of which must
 * produce exactly the diagnostics in its `expected` file. */
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "tests.h"
#include "tmpdir.h"
#include "yaml-node.h"

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


static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Parse `text` as a file named "t.yaml" and return the diagnostics as text. */
static char *parse_diag(const char *text, size_t len, int *ret_r) {
        _cleanup_(ynode_freep) YNode *root = NULL;
        Diag d = {};
        char *out;
        *ret_r = ynode_parse_string(text, len, "t.yaml", &root, &d);
        out = diag_text(&d, "\001"); /* strip nothing */
        diag_done(&d);
        return out;
}

/* A string builder for the large documents below. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static char *repeat_fmt(const char *head, const char *fmt, unsigned n, const char *tail) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        fputs(head, f);
        for (unsigned i = 0; i < n; i++)
                fprintf(f, fmt, i);
        fputs(tail, f);
        fclose(f);
        return buf;
}
#pragma GCC diagnostic pop

TEST(limit_keys_per_mapping) {
        /* 100k keys used to take 22-51 s (quadratic duplicate check); now the
         * mapping stops at the limit, and the duplicate check is hashed. */
        char *text = repeat_fmt("", "k%u: 1\n", 100000, ""), *got;
        double t0 = now_sec();
        int r;
        got = parse_diag(text, strlen(text), &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:4097:1: more than 4096 keys in one mapping; refusing the file\n");
        ASSERT_TRUE(now_sec() - t0 < 2.0);
        free(got);
        free(text);

        /* 4096 distinct keys are fine, and quick; a duplicate among them is found. */
        text = repeat_fmt("", "k%u: 1\n", 4096, "k17: 2\n");
        t0 = now_sec();
        got = parse_diag(text, strlen(text), &r);
        ASSERT_STREQ(got, "t.yaml:4097:1: more than 4096 keys in one mapping; refusing the file\n");
        free(got);
        free(text);
        text = repeat_fmt("", "k%u: 1\n", 4095, "k17: 2\n");
        got = parse_diag(text, strlen(text), &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:4096:1: duplicate key 'k17' (first defined at line 18, column 1)\n");
        ASSERT_TRUE(now_sec() - t0 < 2.0);
        free(got);
        free(text);
}

TEST(limit_items_per_list) {
        char *text = repeat_fmt("[", "%u, ", 100000, "0]"), *got;
        int r;
        got = parse_diag(text, strlen(text), &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:1:23468: more than 4096 items in one list; refusing the file\n");
        free(got);
        free(text);
}

TEST(limit_nesting_depth) {
        /* 100k levels of flow nesting took 26 s inside libyaml (its scanner's
         * simple-key stack makes every token cost O(depth)); the depth is counted on
         * the event stream, so parsing stops after 65 levels. */
        size_t n = 100000;
        char *text = malloc(2 * n + 1), *got;
        double t0 = now_sec();
        int r;
        memset(text, '[', n);
        memset(text + n, ']', n);
        text[2 * n] = 0;
        got = parse_diag(text, 2 * n, &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:1:65: nesting deeper than 64 levels; refusing the file\n");
        ASSERT_TRUE(now_sec() - t0 < 2.0);
        free(got);

        /* block style, mappings: 64 levels are fine (the top-level mapping and 63
         * below it), 65 are not */
        for (unsigned depth = 63; depth <= 64; depth++) {
                char *buf = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&buf, &size);
                for (unsigned i = 0; i < depth; i++)
                        fprintf(f, "%*sk:\n", (int) i, "");
                fprintf(f, "%*sv: 1\n", (int) depth, "");
                fclose(f);
                got = parse_diag(buf, size, &r);
                if (depth == 63)
                        ASSERT_STREQ(got, "");
                else
                        ASSERT_STREQ(got, "t.yaml:65:65: nesting deeper than 64 levels; refusing the file\n");
                free(got);
                free(buf);
        }
        free(text);
}

TEST(encoding_errors_at_their_position) {
        static const struct {
                const char *text;
                size_t len;
                const char *expected;
        } cases[] = {
                { "a: 1\nb: x\0y\n", 11, "t.yaml:2:5: invalid character: control characters are not allowed (0x00)\n" },
                { "a: 1\nbb: 'x\x01'\n", 12, "t.yaml:2:7: invalid character: control characters are not allowed (0x01)\n" },
                { "a: 1\r\nb: 2\r\nc: \xff\n", 16, "t.yaml:3:4: invalid character: invalid leading UTF-8 octet (0xFF)\n" },
                /* the offset of the octet that breaks the sequence: here the newline */
                { "k: \xc3\xa9\xc3\xa9\n\xc3\xa9: \xe2\x82\n", 17,
                  "t.yaml:2:5: invalid character: invalid trailing UTF-8 octet (0x0A)\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int r;
                char *got = parse_diag(cases[i].text, cases[i].len, &r);
                ASSERT_INT_EQ(r, -EINVAL);
                ASSERT_STREQ(got, cases[i].expected);
                free(got);
        }
}

TEST(non_scalar_key_then_empty_key) {
        int r;
        char *got = parse_diag("? [a]\n: 1\n'': 2\n", 15, &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_TRUE(strstr(got, "line 0") == NULL);
        ASSERT_STREQ(got, "t.yaml:1:3: a mapping key must be a plain name, not a list\n");
        free(got);
        got = parse_diag("{[a]: 1, '': 2, '': 3}\n", 23, &r);
        ASSERT_TRUE(strstr(got, "line 0") == NULL);
        ASSERT_STREQ(got, "t.yaml:1:2: a mapping key must be a plain name, not a list\n"
                          "t.yaml:1:17: duplicate key '' (first defined at line 1, column 10)\n");
        free(got);
}

TEST(yaml_tags_refused) {
        int r;
        char *got = parse_diag("a: 1\nb: !!str 2\n", 16, &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:2:4: YAML tags (!!str) are not supported; remove the tag and write the value plainly\n");
        free(got);
        got = parse_diag("a: !foo {x: 1}\n", 15, &r);
        ASSERT_STREQ(got, "t.yaml:1:4: YAML tags (!foo) are not supported; remove the tag and write the value plainly\n");
        free(got);
}

TEST(fifo_and_size_refused) {
        /* A FIFO used to block the loader forever in fopen(). */
        char *etc = tmpdir_new(), *p = NULL, *big;
        char *dirs[] = { etc, NULL };
        const char *rels[] = { "iotuned.yaml", "iotuned.yaml.d/10-x.yaml", "profiles/x.yaml" };
        for (size_t i = 0; i < ELEMENTSOF(rels); i++) {
                Diag d = {};
                char *got, *expected = NULL;
                tmpdir_write(etc, rels[i], "");
                p = path_join(etc, rels[i]);
                ASSERT_TRUE(unlink(p) == 0 && mkfifo(p, 0644) == 0);
                ASSERT_TRUE(load(dirs, true, &d) == NULL);
                got = diag_text(&d, "\001");
                ASSERT_TRUE(asprintf(&expected, "%s: not a regular file\n", p) > 0);
                ASSERT_STREQ(got, expected);
                unlink(p);
                free(expected);
                free(got);
                free(p);
                diag_done(&d);
        }

        /* 1 MiB is the limit per file */
        big = repeat_fmt("", "# %07u padding padding padding padding padding padding padding padding pad\n",
                         1024 * 1024 / 40, "");
        ASSERT_TRUE(strlen(big) > 1024 * 1024);
        tmpdir_write(etc, "iotuned.yaml.d/20-big.yaml", big);
        {
                Diag d = {};
                char *got = NULL, *expected = NULL;
                ASSERT_TRUE(load(dirs, true, &d) == NULL);
                got = diag_text(&d, etc);
                ASSERT_TRUE(asprintf(&expected, "/iotuned.yaml.d/20-big.yaml: file is larger than 1024 KiB (1 MiB), "
                                                "the limit for a configuration file; refusing it\n") > 0);
                ASSERT_STREQ(got, expected);
                free(got);
                free(expected);
                diag_done(&d);
        }
        big[1024 * 1024 - 1] = 0; /* exactly 1 MiB - 1: read */
        tmpdir_write(etc, "iotuned.yaml.d/20-big.yaml", big);
        {
                Diag d = {};
                Config *c = load(dirs, true, &d);
                ASSERT_TRUE(c);
                config_free(c);
        }
        free(big);
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
          T(extends_inherits_with_origins), T(rule_set_overrides_and_match_fields), T(limit_keys_per_mapping),
          T(limit_items_per_list), T(limit_nesting_depth), T(encoding_errors_at_their_position),
          T(non_scalar_key_then_empty_key), T(yaml_tags_refused), T(fifo_and_size_refused), T(malformed_corpus))
