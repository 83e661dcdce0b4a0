/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Configuration loading: precedence, drop-ins, masking, inheritance, and the
 * corpus of malformed files under tests/fixtures/config-bad/, each of which must
 * produce exactly the diagnostics in its `expected` file. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
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


/* CPU time, not wall time: the bounds below catch quadratic blowups (tens of
 * seconds) and must not trip on a loaded machine or under ASan. */
static double now_sec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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
        ASSERT_TRUE(now_sec() - t0 < 5.0);
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
        ASSERT_TRUE(now_sec() - t0 < 5.0);
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
        ASSERT_TRUE(now_sec() - t0 < 5.0);
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
                { "a: 1\nb: x\0y\n", sizeof("a: 1\nb: x\0y\n") - 1, "t.yaml:2:5: invalid character: control characters are not allowed (0x00)\n" },
                { "a: 1\nbb: 'x\x01'\n", sizeof("a: 1\nbb: 'x\x01'\n") - 1, "t.yaml:2:7: invalid character: control characters are not allowed (0x01)\n" },
                { "a: 1\r\nb: 2\r\nc: \xff\n", sizeof("a: 1\r\nb: 2\r\nc: \xff\n") - 1, "t.yaml:3:4: invalid character: invalid leading UTF-8 octet (0xFF)\n" },
                /* the offset of the octet that breaks the sequence: here the newline */
                { "k: \xc3\xa9\xc3\xa9\n\xc3\xa9: \xe2\x82\n", sizeof("k: \xc3\xa9\xc3\xa9\n\xc3\xa9: \xe2\x82\n") - 1,
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
        char *got = parse_diag("? [a]\n: 1\n'': 2\n", sizeof("? [a]\n: 1\n'': 2\n") - 1, &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_TRUE(strstr(got, "line 0") == NULL);
        ASSERT_STREQ(got, "t.yaml:1:3: a mapping key must be a plain name, not a list\n");
        free(got);
        got = parse_diag("{[a]: 1, '': 2, '': 3}\n", sizeof("{[a]: 1, '': 2, '': 3}\n") - 1, &r);
        ASSERT_TRUE(strstr(got, "line 0") == NULL);
        ASSERT_STREQ(got, "t.yaml:1:2: a mapping key must be a plain name, not a list\n"
                          "t.yaml:1:17: duplicate key '' (first defined at line 1, column 10)\n");
        free(got);
}

TEST(yaml_tags_refused) {
        int r;
        char *got = parse_diag("a: 1\nb: !!str 2\n", sizeof("a: 1\nb: !!str 2\n") - 1, &r);
        ASSERT_INT_EQ(r, -EINVAL);
        ASSERT_STREQ(got, "t.yaml:2:4: YAML tags (!!str) are not supported; remove the tag and write the value plainly\n");
        free(got);
        got = parse_diag("a: !foo {x: 1}\n", sizeof("a: !foo {x: 1}\n") - 1, &r);
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

/* Many small files in one directory, quickly: tmpdir_write() creates the parent
 * directories for every file. */
static void write_in(const char *dir, const char *name, const char *text) {
        char path[PATH_MAX];
        int fd;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text) || close(fd) < 0)
                abort();
}

/* For the tests that write thousands of files: a tmpfs where there is one (file
 * creation on a loaded machine's disk took most of this test's time). */
static char *bulk_tmpdir_new(void) {
        char *t = strdup("/dev/shm/iotuned-test-XXXXXX");
        if (t && mkdtemp(t))
                return t;
        free(t);
        return tmpdir_new();
}

static char *subdir_new(const char *dir, const char *sub) {
        char *p = path_join(dir, sub);
        if (!p || mkdir_p(p, 0755) < 0)
                abort();
        return p;
}

/* diagnostics of a load as text, paths relative to `dir` */
static char *load_diag(const char *dir, Config **ret) {
        char *dirs[] = { (char *) dir, NULL }, *strip = NULL, *got;
        Diag d = {};
        Config *c = load(dirs, true, &d);
        if (asprintf(&strip, "%s/", dir) < 0)
                abort();
        got = diag_text(&d, strip);
        diag_done(&d);
        free(strip);
        if (ret)
                *ret = c;
        else
                config_free(c);
        return got;
}

TEST(extends_chain_limit_and_speed) {
        /* A 3000-long chain took 32 s (a linear lookup inside the chain walk, for
         * every profile); now it is one linear pass, and refused at 33. */
        char *etc = bulk_tmpdir_new(), *got, *pd = subdir_new(etc, "profiles");
        double t0;
        for (unsigned i = 0; i < 3000; i++) {
                char name[64], text[64];
                snprintf(name, sizeof(name), "p%u.yaml", i);
                if (i == 0)
                        snprintf(text, sizeof(text), "queue: { nr_requests: 64 }\n");
                else
                        snprintf(text, sizeof(text), "extends: p%u\n", i - 1);
                write_in(pd, name, text);
        }
        free(pd);
        t0 = now_sec();
        got = load_diag(etc, NULL);
        ASSERT_TRUE(now_sec() - t0 < 5.0);
        ASSERT_STREQ(got, "profiles/p32.yaml:1:10: 'extends' chain too long: profile 'p32' is number 33 in a chain "
                          "that starts at 'p0'; at most 32 profiles may form one chain\n");
        free(got);
        tmpdir_remove(etc);

        /* 32 is fine, and every profile inherits the root's value */
        etc = tmpdir_new();
        for (unsigned i = 0; i < 32; i++) {
                char rel[64], text[64];
                snprintf(rel, sizeof(rel), "profiles/p%u.yaml", i);
                snprintf(text, sizeof(text), i ? "extends: p%u\n" : "queue: { nr_requests: 64 }\n", i - 1);
                tmpdir_write(etc, rel, text);
        }
        {
                Config *c = NULL;
                got = load_diag(etc, &c);
                ASSERT_STREQ(got, "");
                ASSERT_TRUE(c);
                ASSERT_STREQ(config_find_profile(c, "p31")->resolved[KNOB_NR_REQUESTS].value, "64");
                config_free(c);
                free(got);
        }
        tmpdir_remove(etc);

        /* a long cycle is a cycle, reported per profile, not a too-long chain */
        etc = tmpdir_new();
        for (unsigned i = 0; i < 40; i++) {
                char rel[64], text[64];
                snprintf(rel, sizeof(rel), "profiles/c%02u.yaml", i);
                snprintf(text, sizeof(text), "extends: c%02u\n", (i + 1) % 40);
                tmpdir_write(etc, rel, text);
        }
        got = load_diag(etc, NULL);
        ASSERT_TRUE(strstr(got, "profiles/c00.yaml:1:10: 'extends' cycle: c00 -> c01 -> c02") == got);
        ASSERT_TRUE(strstr(got, "c38 -> c39 -> c00\nprofiles/c01.yaml:1:10: 'extends' cycle: c01 -> c02") != NULL);
        ASSERT_TRUE(strstr(got, "chain too long") == NULL);
        free(got);
        tmpdir_remove(etc);
}

TEST(extends_parent_resolved_once) {
        /* a.yaml extends b; b is resolved through a first and used to be resolved
         * again, its nvme apply string copied twice and the first copy lost (ASan
         * reports the leak). */
        char *etc = tmpdir_new(), *got;
        Config *c = NULL;
        tmpdir_write(etc, "profiles/a.yaml", "extends: b\n");
        tmpdir_write(etc, "profiles/b.yaml", "nvme: { apply: rebind }\n");
        got = load_diag(etc, &c);
        ASSERT_STREQ(got, "");
        ASSERT_TRUE(c);
        ASSERT_STREQ(config_find_profile(c, "a")->nvme_apply_resolved.value, "rebind");
        ASSERT_STREQ(config_find_profile(c, "b")->nvme_apply_resolved.value, "rebind");
        ASSERT_INT_EQ(config_find_profile(c, "a")->nvme_apply_resolved.origin.line, 1);
        config_free(c);
        free(got);
        tmpdir_remove(etc);
}

TEST(many_profiles_and_dropins) {
        char *etc = bulk_tmpdir_new(), *got, *pd = subdir_new(etc, "profiles"), *dd;
        double t0;
        /* 4096 profiles load, quickly; the lookups are bsearch */
        for (unsigned i = 0; i < 4093; i++) { /* + 3 builtin = 4096 */
                char name[64];
                snprintf(name, sizeof(name), "p%u.yaml", i);
                write_in(pd, name, i ? "extends: p0\n" : "");
        }
        t0 = now_sec();
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "");
        ASSERT_TRUE(now_sec() - t0 < 5.0);
        free(got);
        tmpdir_write(etc, "profiles/p4093.yaml", "");
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "more than 4096 files in profiles/ (built-in ones included); refusing the configuration\n");
        free(got);
        for (unsigned i = 4094; i < 4097; i++) {
                char name[64];
                snprintf(name, sizeof(name), "p%u.yaml", i);
                write_in(pd, name, "");
        }
        free(pd);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "profiles: more than 4096 files in profiles/ (over all configuration directories); "
                          "refusing the configuration\n");
        free(got);
        tmpdir_remove(etc);

        etc = bulk_tmpdir_new();
        dd = subdir_new(etc, "iotuned.yaml.d");
        for (unsigned i = 0; i < 4097; i++) {
                char name[64];
                snprintf(name, sizeof(name), "%04u.yaml", i);
                write_in(dd, name, "");
        }
        free(dd);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "iotuned.yaml.d: more than 4096 files in iotuned.yaml.d/ (over all configuration "
                          "directories); refusing the configuration\n");
        free(got);
        tmpdir_remove(etc);
}

TEST(rules_limit) {
        char *etc = tmpdir_new(), *got, *a, *b;
        /* 2 builtin rules + 4094 here = 4096: fine; one more file with one rule: not */
        a = repeat_fmt("rules:\n", "  - { match: { kernel: 'x%u' }, profile: latency }\n", 4094, "");
        tmpdir_write(etc, "iotuned.yaml.d/10-a.yaml", a);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "");
        free(got);
        b = repeat_fmt("rules:\n", "  - { match: { kernel: 'y%u' }, profile: latency }\n", 1, "");
        tmpdir_write(etc, "iotuned.yaml.d/20-b.yaml", b);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "iotuned.yaml.d/20-b.yaml:2:5: more than 4096 rules in all (4097 with this file's); "
                          "refusing the configuration\n");
        free(got);
        free(a);
        free(b);
        tmpdir_remove(etc);
}

TEST(diagnostics_capped) {
        /* 5000 unknown keys: 1000 errors, then one line; still an error */
        char *etc = tmpdir_new(), *text = repeat_fmt("", "k%u: 1\n", 4096, ""), *got;
        Config *c = NULL;
        tmpdir_write(etc, "iotuned.yaml.d/10-a.yaml", text);
        tmpdir_write(etc, "iotuned.yaml.d/20-b.yaml", "rules: 1\n");
        got = load_diag(etc, &c);
        ASSERT_TRUE(!c);
        ASSERT_TRUE(str_startswith(got, "iotuned.yaml.d/10-a.yaml:1:1: unknown key 'k0' in configuration"));
        ASSERT_TRUE(strstr(got, "iotuned.yaml.d/10-a.yaml:1000:1: unknown key 'k999' in configuration") != NULL);
        ASSERT_TRUE(strstr(got, "k1000") == NULL);
        ASSERT_TRUE(str_endswith(got, "\ntoo many errors; only the first 1000 are shown\n"));
        free(got);
        free(text);
        tmpdir_remove(etc);
}

TEST(config_dir_is_a_file) {
        char *etc = tmpdir_new(), *p, *got, *expected = NULL;
        tmpdir_write(etc, "conf", "rules: []\n");
        p = path_join(etc, "conf");
        got = load_diag(p, NULL);
        ASSERT_TRUE(asprintf(&expected, "%s: not a directory\n", p) > 0);
        ASSERT_STREQ(got, expected); /* once, not again for iotuned.yaml.d/ and profiles/ below it */
        free(got);
        free(expected);
        free(p);
        tmpdir_remove(etc);
}

TEST(hidden_files_skipped_relative_mask) {
        char *etc = tmpdir_new(), *got;
        Config *c = NULL;
        tmpdir_write(etc, "profiles/.swap.yaml", "not: [valid\n");
        tmpdir_write(etc, "iotuned.yaml.d/.50-x.yaml", "not: [valid\n");
        tmpdir_write(etc, "iotuned.yaml.d/.50-x.yml", "not: [valid\n");
        /* a relative link that resolves to /dev/null masks too */
        tmpdir_symlink(etc, "profiles/throughput.yaml", "../../../../../../../../../../../dev/null");
        tmpdir_symlink(etc, "profiles/link.yaml", "throughput.yaml"); /* a link to the mask */
        tmpdir_write(etc, "iotuned.yaml", "rules: []\n");
        got = load_diag(etc, &c);
        ASSERT_STREQ(got, "");
        ASSERT_TRUE(c);
        ASSERT_TRUE(config_find_profile(c, "throughput") == NULL);
        ASSERT_TRUE(config_find_profile(c, "link") == NULL);
        ASSERT_INT_EQ(strv_length(c->masked), 2);
        config_free(c);
        free(got);
        tmpdir_remove(etc);
}

TEST(permissions_refused) {
        char *etc = tmpdir_new(), *other = tmpdir_new(), *got, *p, *expected = NULL;
        Config *c = NULL;

        /* a file written by anyone but root */
        tmpdir_write(etc, "iotuned.yaml", "rules: []\n");
        p = path_join(etc, "iotuned.yaml");
        ASSERT_TRUE(chmod(p, 0666) == 0);
        got = load_diag(etc, &c);
        ASSERT_TRUE(!c);
        ASSERT_STREQ(got, "iotuned.yaml: writable by group/others (mode 0666), refusing it\n");
        free(got);
        ASSERT_TRUE(chmod(p, 0620) == 0);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "iotuned.yaml: writable by group (mode 0620), refusing it\n");
        free(got);
        ASSERT_TRUE(chmod(p, 0644) == 0);
        free(p);

        /* a directory */
        tmpdir_write(etc, "profiles/fast.yaml", "queue: { nr_requests: 64 }\n");
        p = path_join(etc, "profiles");
        ASSERT_TRUE(chmod(p, 0777) == 0);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "profiles: writable by group/others (mode 0777), refusing it\n");
        free(got);
        ASSERT_TRUE(chmod(p, 0755) == 0);
        free(p);
        /* the configuration directory above a drop-in directory */
        ASSERT_TRUE(chmod(etc, 01777) == 0);
        got = load_diag(etc, NULL);
        /* once, not once per file or role read from it */
        ASSERT_TRUE(asprintf(&expected, "%s: writable by group/others (mode 1777), refusing it\n", etc) > 0);
        ASSERT_STREQ(got, expected);
        free(expected);
        free(got);
        ASSERT_TRUE(chmod(etc, 0755) == 0);

        /* a symbolic link's target */
        tmpdir_write(other, "t.yaml", "rules: []\n");
        p = path_join(other, "t.yaml");
        ASSERT_TRUE(chmod(p, 0646) == 0);
        tmpdir_symlink(etc, "iotuned.yaml.d/50-link.yaml", p);
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "iotuned.yaml.d/50-link.yaml: writable by others (mode 0646), refusing it\n");
        free(got);

        /* owned by someone else (root can chown to show it) */
        ASSERT_TRUE(chmod(p, 0644) == 0);
        if (geteuid() == 0) {
                ASSERT_TRUE(chown(p, 4321, 4321) == 0);
                got = load_diag(etc, NULL);
                ASSERT_STREQ(got, "iotuned.yaml.d/50-link.yaml: owned by uid 4321, not root, refusing it (mode 0644)\n");
                free(got);
                ASSERT_TRUE(chown(p, 0, 0) == 0);
        } else
                fprintf(stderr, "# not root: the owner check is not exercised\n");
        got = load_diag(etc, NULL);
        ASSERT_STREQ(got, "");
        free(got);
        free(p);
        tmpdir_remove(other);
        tmpdir_remove(etc);
}

/* Copy a fixture tree with explicit modes (0755 directories, 0644 files), whatever
 * the umask of the checkout was: the loader refuses group-writable files. */
static int copy_tree(const char *src, const char *dst) {
        DIR *dh = opendir(src);
        struct dirent *de;
        int r = 0;

        if (!dh || mkdir(dst, 0755) < 0 || chmod(dst, 0755) < 0) {
                if (dh)
                        closedir(dh);
                return -errno;
        }
        while (r == 0 && (de = readdir(dh))) {
                char *s = NULL, *t = NULL;
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                s = path_join(src, de->d_name);
                t = path_join(dst, de->d_name);
                if (lstat(s, &st) < 0)
                        r = -errno;
                else if (S_ISDIR(st.st_mode))
                        r = copy_tree(s, t);
                else {
                        FILE *in = fopen(s, "re"), *out = fopen(t, "we");
                        char buf[4096];
                        size_t n;
                        if (!in || !out)
                                r = -EIO;
                        while (r == 0 && (n = fread(buf, 1, sizeof(buf), in)) > 0)
                                if (fwrite(buf, 1, n, out) != n)
                                        r = -EIO;
                        if (in)
                                fclose(in);
                        if (out && fclose(out) != 0)
                                r = -EIO;
                        if (r == 0 && chmod(t, 0644) < 0)
                                r = -errno;
                }
                free(s);
                free(t);
        }
        closedir(dh);
        return r;
}

TEST(malformed_corpus) {
        const char *root = getenv("IOTUNED_TEST_FIXTURES");
        char *corpus = NULL, *tmp = tmpdir_new();
        struct dirent *de;
        DIR *dh;
        int cases = 0;

        ASSERT_TRUE(root);
        ASSERT_TRUE(asprintf(&corpus, "%s/config-bad", root) > 0);
        dh = opendir(corpus);
        ASSERT_TRUE(dh);
        while ((de = readdir(dh))) {
                char *src = NULL, *casedir = NULL, *expected = NULL, *strip = NULL, *got;
                char *dirs[2];
                Diag d = {};
                Config *c;

                if (de->d_name[0] == '.')
                        continue;
                ASSERT_TRUE(asprintf(&src, "%s/%s", corpus, de->d_name) > 0);
                ASSERT_TRUE(asprintf(&casedir, "%s/%s", tmp, de->d_name) > 0);
                ASSERT_INT_EQ(copy_tree(src, casedir), 0);
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
                free(src);
                cases++;
        }
        closedir(dh);
        free(corpus);
        tmpdir_remove(tmp);
        /* The corpus must not silently vanish. */
        ASSERT_TRUE(cases >= 15);
}

/* Callers pass the root as they were given it: NULL, "" and "/" are the real
 * root, anything else is prefixed; --config replaces the search path. */
TEST(paths_default_takes_the_root_as_given) {
        static const char *const real[] = { NULL, "", "/" };
        ConfigPaths p = {};

        for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
                ASSERT_INT_EQ(config_paths_default(real[i], NULL, &p), 0);
                ASSERT_TRUE(p.builtin);
                ASSERT_STREQ(p.dirs[0], IOTUNED_ETC_DIR);
                ASSERT_STREQ(p.dirs[1], IOTUNED_RUN_DIR);
                ASSERT_STREQ(p.dirs[2], IOTUNED_VENDOR_DIR);
                ASSERT_TRUE(!p.dirs[3]);
                config_paths_done(&p);
        }
        ASSERT_INT_EQ(config_paths_default("/srv/tree/", NULL, &p), 0);
        ASSERT_TRUE(str_startswith(p.dirs[0], "/srv/tree/") && streq(p.dirs[0] + strlen("/srv/tree"), IOTUNED_ETC_DIR));
        config_paths_done(&p);
        ASSERT_INT_EQ(config_paths_default("/srv/tree", "/tmp/conf", &p), 0);
        ASSERT_STREQ(p.dirs[0], "/tmp/conf");
        ASSERT_TRUE(!p.dirs[1]);
        config_paths_done(&p);
}

TEST_MAIN(T(builtin_defaults_without_any_file), T(etc_overrides_vendor_by_file_name),
          T(dropins_in_name_order_later_wins), T(empty_rules_list_resets), T(dev_null_masks),
          T(extends_inherits_with_origins), T(rule_set_overrides_and_match_fields), T(limit_keys_per_mapping),
          T(limit_items_per_list), T(limit_nesting_depth), T(encoding_errors_at_their_position),
          T(non_scalar_key_then_empty_key), T(yaml_tags_refused), T(fifo_and_size_refused),
          T(extends_chain_limit_and_speed), T(extends_parent_resolved_once), T(many_profiles_and_dropins),
          T(rules_limit), T(diagnostics_capped), T(config_dir_is_a_file), T(hidden_files_skipped_relative_mask), T(permissions_refused), T(malformed_corpus),
          T(paths_default_takes_the_root_as_given))
