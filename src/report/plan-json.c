/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <math.h>
#include <errno.h>
#include <json-c/json.h>

#include "nvme-feature.h"
#include "plan-json.h"
#include "util.h"

json_object *report_document_new(const char *command) {
        json_object *j;

        assert(command);
        j = json_object_new_object();
        if (!j)
                return NULL;
        json_object_object_add(j, "version", json_object_new_int(REPORT_SCHEMA_VERSION));
        json_object_object_add(j, "command", json_object_new_string(command));
        return j;
}

static json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

json_object *report_mark_json(const Mark *m) {
        json_object *o;
        if (!m || !m->file)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "file", json_object_new_string(m->file));
        json_object_object_add(o, "line", json_object_new_int((int) m->line));
        json_object_object_add(o, "column", json_object_new_int((int) m->column));
        return o;
}

/* The controller's identity and queues, for status and explain (--json). */
static json_object *nvme_json(const Device *d) {
        const NvmeCtrl *c = d->nvme;
        json_object *o = json_object_new_object(), *maps = NULL;
        NvmeQueueMap m;

        assert(d);

        json_object_object_add(o, "controller", json_object_new_string(c->name));
        json_object_object_add(o, "transport", str_or_null(c->transport));
        json_object_object_add(o, "address", str_or_null(c->address));
        json_object_object_add(o, "state", str_or_null(c->state));
        json_object_object_add(o, "model", str_or_null(c->model));
        json_object_object_add(o, "serial", str_or_null(c->serial));
        json_object_object_add(o, "firmware", str_or_null(c->firmware));
        json_object_object_add(o, "subsysnqn", str_or_null(c->subsysnqn));
        json_object_object_add(o, "numa_node", json_object_new_int(c->numa_node));
        json_object_object_add(o, "queue_count", json_object_new_int((int) c->queue_count));
        json_object_object_add(o, "io_queue_depth", c->sqsize ? json_object_new_int((int) c->sqsize + 1) : NULL);
        /* CAP.MQES + 1: the most nvme.io_queue_depth can give this controller; its tag
         * depth (the disk's nr_tags) is one less than the depth it was probed with. */
        json_object_object_add(o, "max_queue_entries",
                               c->max_queue_entries ? json_object_new_int((int) c->max_queue_entries) : NULL);
        json_object_object_add(o, "identified", json_object_new_boolean(c->identified));
        json_object_object_add(o, "identify_error", str_or_null(c->identify_error));
        json_object_object_add(o, "apst_supported", c->identified ? json_object_new_boolean(c->apsta) : NULL);
        json_object_object_add(o, "apst_by_kernel", json_object_new_boolean(c->has_pm_qos));
        json_object_object_add(o, "power_states", c->identified ? json_object_new_int((int) c->npss + 1) : NULL);
        json_object_object_add(o, "granted_io_sq", c->granted_sq ? json_object_new_int((int) c->granted_sq) : NULL);
        json_object_object_add(o, "granted_io_cq", c->granted_cq ? json_object_new_int((int) c->granted_cq) : NULL);
        if (nvme_queue_map_from_queues(d->queues, d->n_queues, d->io_poll, &m) == 0 && m.known) {
                maps = json_object_new_object();
                json_object_object_add(maps, "default", json_object_new_int((int) m.n_default));
                json_object_object_add(maps, "read", json_object_new_int((int) m.n_read));
                json_object_object_add(maps, "poll", json_object_new_int((int) m.n_poll));
        }
        json_object_object_add(o, "queue_maps", maps);
        return o;
}

static json_object *device_facts_json(const Device *d) {
        json_object *o = json_object_new_object(), *q = json_object_new_array();

        assert(d);

        json_object_object_add(o, "syspath", json_object_new_string(d->syspath));
        json_object_object_add(o, "devnode", str_or_null(d->devnode));
        json_object_object_add(o, "transport", json_object_new_string(d->transport));
        json_object_object_add(o, "model", str_or_null(d->model));
        json_object_object_add(o, "serial", str_or_null(d->serial));
        json_object_object_add(o, "firmware", str_or_null(d->firmware));
        json_object_object_add(o, "wwn", str_or_null(d->wwn));
        json_object_object_add(o, "rotational", json_object_new_boolean(d->rotational));
        json_object_object_add(o, "size_bytes", json_object_new_uint64(d->size_bytes));
        json_object_object_add(o, "numa_node", json_object_new_int(d->numa_node));
        json_object_object_add(o, "blk_mq", json_object_new_boolean(d->has_mq));
        json_object_object_add(o, "multipath_head", json_object_new_boolean(d->multipath_head));
        json_object_object_add(o, "multipath_head_name", str_or_null(d->multipath_head_name));
        json_object_object_add(o, "nr_tags", json_object_new_int((int) d->nr_tags));
        for (size_t i = 0; i < d->n_queues; i++) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "index", json_object_new_int((int) d->queues[i].index));
                json_object_object_add(e, "cpu_list", str_or_null(d->queues[i].cpu_list));
                json_object_array_add(q, e);
        }
        json_object_object_add(o, "hw_queues", q);
        json_object_object_add(o, "io_poll", json_object_new_boolean(d->io_poll));
        json_object_object_add(o, "nqn", str_or_null(d->nqn));
        json_object_object_add(o, "nvme", d->nvme ? nvme_json(d) : NULL);
        if (d->multipath_head_name) {
                /* A hidden NVMe multipath path: which head it serves, through which
                 * controller, and in what state when it was last looked at. */
                json_object *path = json_object_new_object();
                json_object_object_add(path, "head", json_object_new_string(d->multipath_head_name));
                json_object_object_add(path, "controller", d->nvme ? json_object_new_string(d->nvme->name) : NULL);
                json_object_object_add(path, "state", d->nvme ? str_or_null(d->nvme->state) : NULL);
                json_object_object_add(path, "ana_state", str_or_null(d->ana_state));
                json_object_object_add(o, "multipath_path", path);
        }
        return o;
}

static json_object *load_json(const BlockLoad *l) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "seconds", json_object_new_double(l->seconds));
        json_object_object_add(o, "iops", json_object_new_double(l->iops));
        json_object_object_add(o, "queue_depth", json_object_new_double(l->queue_depth));
        json_object_object_add(o, "await_ms", json_object_new_double(l->await_ms));
        json_object_object_add(o, "utilisation", json_object_new_double(l->utilisation));
        return o;
}

json_object *report_findings_json(const FindingList *l) {
        return report_findings_json_from(l, FINDING_INFO);
}

json_object *report_findings_json_from(const FindingList *l, FindingSeverity min) {
        json_object *a = json_object_new_array();

        assert(l);

        for (size_t i = 0; a && i < l->n; i++) {
                const Finding *f = &l->items[i];
                if (f->severity < min)
                        continue;
                json_object *e = json_object_new_object(), *v = json_object_new_object();
                json_object_object_add(e, "kind", json_object_new_string(f->kind));
                json_object_object_add(e, "severity", json_object_new_string(finding_severity_to_string(f->severity)));
                json_object_object_add(e, "device", json_object_new_string(f->device));
                json_object_object_add(e, "knob", str_or_null(f->knob));
                json_object_object_add(e, "source", str_or_null(f->source));
                json_object_object_add(e, "summary", json_object_new_string(f->summary));
                for (size_t k = 0; k < f->n_values; k++)
                        /* JSON has no NaN or infinity: an unmeasurable number is null. */
                        json_object_object_add(v, f->values[k].name,
                                               isfinite(f->values[k].value) ? json_object_new_double(f->values[k].value)
                                                                            : NULL);
                json_object_object_add(e, "values", v);
                json_object_array_add(a, e);
        }
        return a;
}

int report_add_plan(json_object *o, const Plan *p, bool dry_run) {
        json_object *devs = json_object_new_array(), *summary = json_object_new_object(),
                    *states = json_object_new_object();
        unsigned counts[_STATE_MAX];

        assert(o);
        assert(p);
        if (!devs || !summary || !states) {
                json_object_put(devs);
                json_object_put(summary);
                json_object_put(states);
                return -ENOMEM;
        }

        for (size_t i = 0; i < p->n; i++) {
                const DevicePlan *dp = p->devices[i];
                json_object *d = json_object_new_object(), *settings = json_object_new_array();

                json_object_object_add(d, "device", json_object_new_string(dp->device->name));
                json_object_object_add(d, "profile", str_or_null(dp->profile));
                json_object_object_add(d, "rule", str_or_null(dp->rule));
                json_object_object_add(d, "reason", str_or_null(dp->reason));
                json_object_object_add(d, "excluded", json_object_new_boolean(dp->excluded));
                json_object_object_add(d, "error", str_or_null(dp->error));
                json_object_object_add(d, "facts", device_facts_json(dp->device));
                {
                        json_object *irq = json_object_new_object();
                        json_object_object_add(irq, "placement",
                                               dp->irq_placement == IRQ_PLACEMENT_UNSET
                                                       ? NULL
                                                       : json_object_new_string(irq_placement_to_string(dp->irq_placement)));
                        json_object_object_add(irq, "keep_irqbalance_away",
                                               json_object_new_boolean(dp->keep_irqbalance_away));
                        json_object_object_add(irq, "note", str_or_null(dp->irq_note));
                        json_object_object_add(d, "irq", irq);
                }
                for (size_t k = 0; k < dp->n_settings; k++) {
                        const Setting *s = &dp->settings[k];
                        json_object *e = json_object_new_object();
                        json_object_object_add(e, "knob", json_object_new_string(s->knob->name));
                        json_object_object_add(e, "object", str_or_null(s->object));
                        json_object_object_add(e, "irq", s->irq >= 0 ? json_object_new_int(s->irq) : NULL);
                        json_object_object_add(e, "effective_affinity", s->irq >= 0 ? str_or_null(s->detail) : NULL);
                        json_object_object_add(e, "detail", s->irq < 0 ? str_or_null(s->detail) : NULL);
                        json_object_object_add(e, "desired", json_object_new_string(s->desired));
                        json_object_object_add(e, "effective", str_or_null(s->effective));
                        json_object_object_add(e, "observed", str_or_null(s->observed));
                        json_object_object_add(e, "previous", str_or_null(s->previous));
                        json_object_object_add(e, "state", json_object_new_string(setting_state_to_string(s->state)));
                        json_object_object_add(e, "note", str_or_null(s->note));
                        json_object_object_add(e, "errno", s->error ? json_object_new_int(-s->error) : NULL);
                        json_object_object_add(e, "origin", report_mark_json(&s->origin));
                        if (s->rt.drifts || s->rt.last_change_usec || s->rt.conflict) {
                                json_object_object_add(e, "drifts", json_object_new_int((int) s->rt.drifts));
                                json_object_object_add(e, "conflict", json_object_new_boolean(s->rt.conflict));
                                json_object_object_add(e, "last_change_realtime_usec",
                                                       json_object_new_uint64(s->rt.last_change_usec));
                                json_object_object_add(e, "writer", str_or_null(s->writer));
                        }
                        json_object_array_add(settings, e);
                }
                json_object_object_add(d, "nvme_note", str_or_null(dp->nvme_note));
                json_object_object_add(d, "settings", settings);
                if (dp->has_load)
                        json_object_object_add(d, "load", load_json(&dp->load));
                if (finding_list_worst(&dp->findings) >= FINDING_NOTICE)
                        /* What the load shows; the numbers themselves are "load". */
                        json_object_object_add(d, "findings", report_findings_json_from(&dp->findings, FINDING_NOTICE));
                json_object_array_add(devs, d);
        }

        plan_count_states(p, counts);
        for (size_t s = 0; s < _STATE_MAX; s++)
                json_object_object_add(states, setting_state_to_string(s), json_object_new_int((int) counts[s]));
        json_object_object_add(summary, "devices", json_object_new_int((int) p->n));
        json_object_object_add(summary, "settings", states);

        json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
        json_object_object_add(o, "devices", devs);
        json_object_object_add(o, "summary", summary);
        return 0;
}

json_object *report_plan_document(const char *command, const Plan *p, bool dry_run) {
        json_object *j = report_document_new(command);

        assert(command);
        assert(p);

        if (j && report_add_plan(j, p, dry_run) < 0) {
                json_object_put(j);
                return NULL;
        }
        return j;
}
