/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Typed values on the YAML tree: each accessor checks a node's kind and adds a
 * diagnostic with its position on a mismatch; the knob, nvme and irq sections a
 * profile or a rule's `set:` may have. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-internal.h"
#include "cpuset.h"
#include "util.h"

void value_done(Value *v) {
        assert(v);

        free(v->value);
        v->value = NULL;
        mark_done(&v->origin);
}

int node_expect_kind(const YNode *n, YNodeKind kind, const char *what, Diag *d) {
        assert(n);
        assert(what);
        assert(d);

        if (n->kind == kind)
                return 0;
        return diag_add(d, &n->mark, "'%s' must be %s, got %s", what, ynode_kind_name(kind), ynode_kind_name(n->kind));
}

int node_expect_string(const YNode *n, const char *what, Diag *d) {
        int r;

        assert(n);
        assert(what);
        assert(d);

        r = node_expect_kind(n, YNODE_SCALAR, what, d);
        if (r < 0)
                return r;
        if (ynode_is_null(n))
                return diag_add(d, &n->mark, "'%s' must not be empty", what);
        return 0;
}

void node_unknown_key(const YPair *p, const char *where, const char *const *keys, size_t n_keys, Diag *d) {
        char expected[512] = "";
        size_t off = 0;

        assert(p);
        assert(where);
        assert(keys || n_keys == 0);
        assert(d);

        for (size_t i = 0; i < n_keys && off < sizeof(expected); i++)
                off += snprintf(expected + off, sizeof(expected) - off, "%s%s", i ? ", " : "", keys[i]);
        diag_add(d, &p->key->mark, "unknown key '%s' in %s; expected one of: %s", p->key->scalar, where, expected);
}

bool profile_name_valid(const char *s) {
        assert(s);

        if (!s[0] || strlen(s) > 64 || !(islower((unsigned char) s[0]) || isdigit((unsigned char) s[0])))
                return false;
        for (const char *p = s; *p; p++)
                if (!(islower((unsigned char) *p) || isdigit((unsigned char) *p) || *p == '-' || *p == '_'))
                        return false;
        return true;
}

int node_parse_profile_name(const YNode *n, const char *what, char **ret, Diag *d) {
        char *c;

        assert(what);
        assert(ret);
        assert(n);
        assert(d);

        if (node_expect_string(n, what, d) < 0)
                return -EINVAL;
        if (!profile_name_valid(n->scalar))
                return diag_add(d, &n->mark, "invalid profile name '%s' for '%s': expected lowercase letters, digits, '-' and '_'",
                                n->scalar, what);
        c = strdup(n->scalar);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

int node_parse_bool(const YNode *n, const char *what, bool *ret, Diag *d) {
        int b;

        assert(what);
        assert(ret);
        assert(n);
        assert(d);

        if (node_expect_string(n, what, d) < 0)
                return -EINVAL;
        b = parse_boolean(n->scalar);
        if (b >= 0 && n->quoted)
                return diag_add(d, &n->mark, "'%s' is a quoted string; write %s without quotes for a boolean", what,
                                b ? "true" : "false");
        if (b < 0)
                return diag_add(d, &n->mark, "invalid value '%s' for '%s': expected true or false", n->scalar, what);
        *ret = b;
        return 0;
}

int config_parse_knob_value(const Knob *k, const char *value, char **ret) {
        assert(k);
        assert(value);
        assert(ret);

        return k->parse(value, ret);
}

/* `coalescing: { threshold: 8, time_us: 100 }`, the long form of "threshold=8,time_us=100". */
static int coalescing_mapping_text(const YNode *n, char **ret, Diag *d) {
        static const char *const keys[] = { "threshold", "time_us" };
        _cleanup_free_ char *text = NULL;
        int r = 0;

        assert(ret);
        assert(n);
        assert(d);

        if (n->n_pairs == 0)
                return diag_add(d, &n->mark, "empty coalescing mapping: expected threshold and/or time_us");
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YPair *p = &n->pairs[i];
                char *j = NULL;
                if (!streq(p->key->scalar, "threshold") && !streq(p->key->scalar, "time_us")) {
                        node_unknown_key(p, "coalescing", keys, ELEMENTSOF(keys), d);
                        r = -EINVAL;
                        continue;
                }
                if (node_expect_string(p->value, p->key->scalar, d) < 0) {
                        r = -EINVAL;
                        continue;
                }
                if (asprintf_safe(&j, "%s%s%s=%s", text ?: "", text ? "," : "", p->key->scalar, p->value->scalar) < 0)
                        return -ENOMEM;
                free(text);
                text = j;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(text);
        return 0;
}

/* `nvme: { apply: reboot|rebind }`: how new queue counts may take effect. */
static int parse_nvme_apply(const YNode *n, Value *v, Diag *d) {
        assert(n);
        assert(v);
        assert(d);

        if (node_expect_string(n, "apply", d) < 0)
                return -EINVAL;
        if (!streq(n->scalar, "reboot") && !streq(n->scalar, "rebind"))
                return diag_add(d, &n->mark,
                                "invalid value '%s' for apply: expected reboot (write the modprobe.d drop-in and wait "
                                "for the next boot) or rebind (also rebind idle controllers now)",
                                n->scalar);
        value_done(v);
        v->value = strdup(n->scalar);
        if (!v->value || mark_copy(&v->origin, &n->mark) < 0)
                return -ENOMEM;
        return 0;
}

/* A `queue:` or `nvme:` section of knobs, in a profile or a rule's `set:`. */
static int parse_knob_section(const YNode *sec, const char *section, Value values[_KNOB_MAX], Value *nvme_apply,
                              Diag *d) {
        int r = 0;

        assert(sec);
        assert(section);
        assert(values);
        assert(d);

        if (node_expect_kind(sec, YNODE_MAPPING, section, d) < 0)
                return -EINVAL;
        for (size_t i = 0; i < sec->n_pairs; i++) {
                const YPair *p = &sec->pairs[i];
                const Knob *k = knob_by_name(p->key->scalar);
                _cleanup_free_ char *mapped = NULL;
                const char *text;
                char *canon = NULL;
                int q;

                if (nvme_apply && streq(p->key->scalar, "apply")) {
                        q = parse_nvme_apply(p->value, nvme_apply, d);
                        if (q == -ENOMEM)
                                return q;
                        if (q < 0)
                                r = q;
                        continue;
                }
                if (!k || !streq(k->section, section)) {
                        const char *names[_KNOB_MAX + 1];
                        size_t n = 0;
                        for (size_t j = 0; j < _KNOB_MAX; j++)
                                if (streq(knob_table[j].section, section))
                                        names[n++] = knob_table[j].name;
                        if (nvme_apply)
                                names[n++] = "apply";
                        node_unknown_key(p, section, names, n, d);
                        r = -EINVAL;
                        continue;
                }
                if (k->id == KNOB_NVME_COALESCING && p->value->kind == YNODE_MAPPING) {
                        q = coalescing_mapping_text(p->value, &mapped, d);
                        if (q == -ENOMEM)
                                return q;
                        if (q < 0) {
                                r = q;
                                continue;
                        }
                } else if (p->value->kind != YNODE_SCALAR) {
                        diag_add(d, &p->value->mark, "invalid value for %s: expected %s, got %s", k->name,
                                 k->expected, ynode_kind_name(p->value->kind));
                        r = -EINVAL;
                        continue;
                } else if (ynode_is_null(p->value)) {
                        diag_add(d, &p->value->mark, "missing value for %s: expected %s", k->name, k->expected);
                        r = -EINVAL;
                        continue;
                }
                text = mapped ?: p->value->scalar;
                q = k->parse(text, &canon);
                if (q == -ENOMEM)
                        return q;
                if (q == -ERANGE) {
                        diag_add(d, &p->value->mark, "value '%s' for %s is out of range: expected %s", text, k->name,
                                 k->expected);
                        r = -EINVAL;
                        continue;
                }
                if (q < 0) {
                        diag_add(d, &p->value->mark, "invalid value '%s' for %s: expected %s", text, k->name,
                                 k->expected);
                        r = -EINVAL;
                        continue;
                }
                value_done(&values[k->id]);
                values[k->id].value = canon;
                if (mark_copy(&values[k->id].origin, &p->value->mark) < 0)
                        return -ENOMEM;
        }
        return r;
}

/* `irq: { placement: queue-local, cpus: "2-7", keep_irqbalance_away: true }` */
static int parse_irq_section(const YNode *sec, IrqPolicy *p, Diag *d) {
        static const char *const keys[] = { "placement", "cpus", "keep_irqbalance_away" };
        const YNode *pl = NULL, *cpus = NULL;
        int r = 0;

        assert(sec);
        assert(p);
        assert(d);

        if (node_expect_kind(sec, YNODE_MAPPING, "irq", d) < 0)
                return -EINVAL;
        for (size_t i = 0; i < sec->n_pairs; i++) {
                const YPair *kv = &sec->pairs[i];
                const char *key = kv->key->scalar;
                if (streq(key, "placement"))
                        pl = kv->value;
                else if (streq(key, "cpus"))
                        cpus = kv->value;
                else if (streq(key, "keep_irqbalance_away")) {
                        bool b;
                        if (node_parse_bool(kv->value, key, &b, d) < 0)
                                r = -EINVAL;
                        else
                                p->keep_irqbalance_away = b;
                } else {
                        node_unknown_key(kv, "irq", keys, ELEMENTSOF(keys), d);
                        r = -EINVAL;
                }
        }
        if (pl) {
                if (node_expect_string(pl, "placement", d) < 0)
                        return -EINVAL;
                p->placement = irq_placement_from_string(pl->scalar);
                if (p->placement == IRQ_PLACEMENT_UNSET)
                        return diag_add(d, &pl->mark,
                                        "invalid placement '%s': expected queue-local, node-local, spread, cpus or leave",
                                        pl->scalar);
                if (mark_copy(&p->origin, &pl->mark) < 0)
                        return -ENOMEM;
        }
        if (cpus) {
                CpuSet s = {};
                if (node_expect_string(cpus, "cpus", d) < 0)
                        return -EINVAL;
                if (cpuset_parse(cpus->scalar, &s) < 0 || cpuset_count(&s) == 0) {
                        cpuset_done(&s);
                        return diag_add(d, &cpus->mark, "invalid cpus '%s': expected a non-empty cpulist such as 2-7,10",
                                        cpus->scalar);
                }
                free(p->cpus);
                r = cpuset_format(&s, &p->cpus) < 0 ? -ENOMEM : r;
                cpuset_done(&s);
                if (r == -ENOMEM)
                        return r;
                if (!pl) {
                        p->placement = IRQ_PLACEMENT_CPUS; /* `cpus:` alone means placement: cpus */
                        if (mark_copy(&p->origin, &cpus->mark) < 0)
                                return -ENOMEM;
                } else if (p->placement != IRQ_PLACEMENT_CPUS)
                        return diag_add(d, &cpus->mark, "'cpus' only goes with placement: cpus (placement is %s)",
                                        irq_placement_to_string(p->placement));
        } else if (p->placement == IRQ_PLACEMENT_CPUS)
                return diag_add(d, &pl->mark, "placement: cpus needs a 'cpus: \"LIST\"' key");
        return r;
}

/* The sections a profile (and a rule's `set:`) may have. Only sections whose knobs
 * exist are accepted: a key we would silently ignore is worse than an error. */
int values_parse_sections(const YNode *pair_value, const char *key, Value values[_KNOB_MAX], IrqPolicy *irq,
                               Value *nvme_apply, Diag *d, bool *handled) {
        assert(pair_value);
        assert(key);
        assert(handled);
        assert(values);
        assert(irq);
        assert(nvme_apply);
        assert(d);

        *handled = streq(key, "queue") || streq(key, "irq") || streq(key, "nvme") || streq(key, "pcie");
        if (streq(key, "irq"))
                return parse_irq_section(pair_value, irq, d);
        if (!*handled)
                return 0;
        return parse_knob_section(pair_value, key, values, streq(key, "nvme") ? nvme_apply : NULL, d);
}
