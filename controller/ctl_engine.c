/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding of the apply seam to the apply engine (see ctl_engine.h).
 */
#include "controller/ctl_engine.h"

#include <string.h>

#include "controller/ctl_apply.h"

static void fill(ctl_apply_opts *o,
                 const ctl_engine *e,
                 const ctl_apply_call *c,
                 bool *changed,
                 ctl_apply_stats *stats)
{
    memset(o, 0, sizeof(*o));
    o->target = c->target;
    o->events = ctl_apply_events_disabled(c->component) ? NULL
                : c->remote                             ? c->target_events
                                                        : e->events;
    o->owner_id = c->owner_id;
    o->component_digest = c->component_digest;
    o->namespace = c->namespace;
    o->adoption_policy = c->adoption_policy;
    o->reconcile_policy = c->reconcile_policy;
    o->update_policy = c->update_policy;
    o->delete_policy = c->delete_policy;
    o->missing_namespaces_policy = c->missing_namespaces_policy;
    o->reapply_interval_ms = c->reapply_interval_ms;
    o->additional_managed_types = c->additional_managed_types;
    o->claimed = c->claimed;
    o->claimed_ctx = c->claimed_ctx;
    o->inventory_changed = changed;
    o->stats = stats;
}

static void count(const ctl_engine *e, const ctl_apply_stats *s)
{
    if (!e->operations) {
        return;
    }
    const char *r[] = {"component", "read"}, *c[] = {"component", "create"},
               *u[] = {"component", "update"}, *d[] = {"component", "delete"};
    co_metric_add(e->operations, r, (double)s->reads);
    co_metric_add(e->operations, c, (double)s->creates);
    co_metric_add(e->operations, u, (double)s->updates);
    co_metric_add(e->operations, d, (double)s->deletes);
}

static int do_apply(void *ctx,
                    const ctl_apply_call *c,
                    struct json_object *inventory,
                    struct json_object *objects,
                    bool *done,
                    bool *inventory_changed)
{
    ctl_engine *e = ctx;
    ctl_apply_opts o;
    ctl_apply_stats st = {0};
    *inventory_changed = false;
    fill(&o, e, c, inventory_changed, &st);
    int rc = ctl_apply(&o, inventory, objects, done);
    count(e, &st);
    return rc;
}

static int do_allowed(void *ctx,
                      const ctl_apply_call *c,
                      struct json_object *inventory,
                      bool *allowed,
                      char **msg)
{
    ctl_engine *e = ctx;
    ctl_apply_opts o;
    ctl_apply_stats st = {0};
    fill(&o, e, c, NULL, &st);
    int rc = ctl_apply_deletion_allowed(&o, inventory, allowed, msg);
    count(e, &st);
    return rc;
}

static int do_delete(void *ctx,
                     const ctl_apply_call *c,
                     struct json_object *inventory,
                     bool *done,
                     bool *inventory_changed)
{
    ctl_engine *e = ctx;
    ctl_apply_opts o;
    ctl_apply_stats st = {0};
    *inventory_changed = false;
    fill(&o, e, c, inventory_changed, &st);
    int rc = ctl_apply_delete(&o, inventory, done);
    count(e, &st);
    return rc;
}

ctl_apply_ops ctl_engine_ops(ctl_engine *e)
{
    ctl_apply_ops ops = {do_apply, do_allowed, do_delete, e};
    return ops;
}
