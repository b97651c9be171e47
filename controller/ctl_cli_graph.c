/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-controller graph`: the dependency graph of Components from files or a cluster as
 * Graphviz DOT, states as colours, cycles (co/api/depgraph.h) in red, and the Blueprints the
 * Components take their source from (docs/blueprints.md) as notes joined by dotted edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/api/policy.h"
#include "controller/ctl_cli_int.h"

/* One node of the drawing: a Component, or a dependency target no Component occupies. */
typedef struct graph_node {
    char *key;
    const char *state; /* status.state, borrowed from the object; NULL = unknown */
    char *blueprint;   /* "NS/NAME" of the Blueprint its source is; NULL = none */
    co_depgraph_list deps;
    bool present;
    bool in_cycle;
} graph_node;

typedef struct graph_nodes {
    graph_node *items;
    size_t len;
    size_t cap;
    struct json_object *objects; /* keeps the states alive */
} graph_nodes;

static graph_node *graph_find(graph_nodes *g, const char *key)
{
    for (size_t i = 0; i < g->len; i++) {
        if (strcmp(g->items[i].key, key) == 0) {
            return &g->items[i];
        }
    }
    return NULL;
}

static graph_node *graph_add(graph_nodes *g, const char *key)
{
    graph_node *n = graph_find(g, key);
    if (n) {
        return n;
    }
    if (g->len == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->items = co_xrealloc(g->items, g->cap * sizeof(*g->items));
    }
    n = &g->items[g->len++];
    memset(n, 0, sizeof(*n));
    n->key = strdup(key);
    return n;
}

static void graph_dispose(graph_nodes *g)
{
    for (size_t i = 0; i < g->len; i++) {
        free(g->items[i].key);
        free(g->items[i].blueprint);
        co_depgraph_list_dispose(&g->items[i].deps);
    }
    free(g->items);
    json_object_put(g->objects);
    memset(g, 0, sizeof(*g));
}

/*
 * "NS/NAME" of the Blueprint the Component @p obj takes its source from (v1alpha1
 * spec.sourceRef.blueprint, v1beta1 spec.source.blueprint; the namespace defaults to the
 * Component's, @p ns), or NULL. Only the Component's spec is read, never the Blueprint.
 */
static char *blueprint_key(const struct json_object *obj, const char *ns)
{
    const char *api = co_json_str(obj, "apiVersion", NULL);
    bool beta = api && strcmp(api, "core.cs.sap.com/v1beta1") == 0;
    const struct json_object *ref =
        co_json_get(obj, "spec", beta ? "source" : "sourceRef", "blueprint", NULL);
    const char *name = co_json_str(ref, "name", NULL);
    if (!name || !name[0]) {
        return NULL;
    }
    const char *bns = co_json_str(ref, "namespace", NULL);
    if (!bns || !bns[0]) {
        bns = ns;
    }
    return bns && bns[0] ? co_xasprintf("%s/%s", bns, name) : co_xstrdup(name);
}

/* Adds the Component @p obj (kept alive by g->objects). */
static int graph_add_component(graph_nodes *g, struct json_object *obj, const char *default_ns)
{
    const char *ns = co_json_meta_namespace(obj);
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    int rc = co_depgraph_object_deps(&deps, &key, obj, ns && ns[0] ? ns : default_ns);
    if (rc < 0) {
        return rc;
    }
    graph_node *n = graph_add(g, key);
    free(key);
    if (n->present) {
        co_depgraph_list_dispose(&deps);
        return co_error_set(CO_EINVALID, "Component \"%s\" is given twice", n->key);
    }
    n->present = true;
    n->deps = deps;
    n->blueprint = blueprint_key(obj, ns && ns[0] ? ns : default_ns);
    n->state = co_json_str(obj, "status", "state", NULL);
    json_object_array_add(g->objects, json_object_get(obj));
    return 0;
}

/* Writes @p s escaped for a DOT string (no newlines: they become spaces). */
static void dot_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', out);
        }
        fputc(*s == '\n' ? ' ' : *s, out);
    }
}

static void dot_quote(FILE *out, const char *s)
{
    fputc('"', out);
    dot_escaped(out, s);
    fputc('"', out);
}

/* The node of a Blueprint: its ID, "blueprint NS/NAME", is no Component's ("NS/NAME"). */
static void dot_blueprint(FILE *out, const char *key)
{
    fprintf(out, "\"blueprint ");
    dot_escaped(out, key);
    fputc('"', out);
}

/* Whether node @p i (which has a Blueprint) is the first to use it. */
static bool first_use(const graph_nodes *g, size_t i)
{
    for (size_t k = 0; k < i; k++) {
        if (g->items[k].blueprint && strcmp(g->items[k].blueprint, g->items[i].blueprint) == 0) {
            return false;
        }
    }
    return true;
}

/* The fill colour of a state (Component status.state). */
static const char *state_colour(const char *state)
{
    static const struct {
        const char *state;
        const char *colour;
    } colours[] = {
        {"Ready", "palegreen"},        {"Pending", "lightyellow"}, {"Processing", "lightblue"},
        {"DeletionPending", "orange"}, {"Deleting", "lightgrey"},  {"Error", "salmon"},
        {"Warning", "gold"},           {"Unmanaged", "lavender"},
    };
    for (size_t i = 0; state && i < CO_ARRAY_SIZE(colours); i++) {
        if (strcmp(colours[i].state, state) == 0) {
            return colours[i].colour;
        }
    }
    return "white";
}

/* An edge lies on a cycle when its target reaches its source again. */
static bool edge_in_cycle(const co_depgraph *dg, const char *from, const char *to)
{
    return co_depgraph_reaches(dg, to, from);
}

static int print_dot(FILE *out, graph_nodes *g)
{
    co_depgraph *dg = co_depgraph_new();
    int rc = 0;
    size_t ncomponents = g->len;
    for (size_t i = 0; rc == 0 && i < ncomponents; i++) {
        rc = co_depgraph_set(dg, g->items[i].key, (const char *const *)g->items[i].deps.items,
                             g->items[i].deps.len);
    }
    co_depgraph_list cycles = {NULL, 0};
    if (rc == 0) {
        rc = co_depgraph_find_cycles(&cycles, dg);
    }
    if (rc < 0) {
        co_depgraph_free(dg);
        return rc;
    }
    for (size_t i = 0; i < ncomponents; i++) {
        for (size_t k = 0; k < g->items[i].deps.len; k++) {
            (void)graph_add(g, g->items[i].deps.items[k]); /* may move g->items */
        }
    }
    for (size_t i = 0; i < ncomponents; i++) {
        graph_node *n = &g->items[i];
        for (size_t k = 0; k < n->deps.len && !n->in_cycle; k++) {
            n->in_cycle = edge_in_cycle(dg, n->key, n->deps.items[k]);
        }
    }

    fprintf(out, "digraph components {\n"
                 "  rankdir=LR;\n"
                 "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
                 "fontname=\"Helvetica\"];\n"
                 "  edge [fontname=\"Helvetica\"];\n");
    for (size_t i = 0; i < cycles.len; i++) {
        fprintf(out, "  // cycle: ");
        dot_escaped(out, cycles.items[i]);
        fprintf(out, "\n");
    }
    for (size_t i = 0; i < g->len; i++) {
        const graph_node *n = &g->items[i];
        fprintf(out, "  ");
        dot_quote(out, n->key);
        fprintf(out, " [label=");
        if (!n->present) {
            dot_quote(out, n->key);
            fprintf(out, ", style=\"rounded,dashed\", tooltip=\"no such Component\"");
        } else {
            fputc('"', out);
            dot_escaped(out, n->key);
            if (n->state) {
                fprintf(out, "\\n");
                dot_escaped(out, n->state);
            }
            fputc('"', out);
            fprintf(out, ", fillcolor=%s", state_colour(n->state));
        }
        if (n->in_cycle) {
            fprintf(out, ", color=red, penwidth=2");
        }
        fprintf(out, "];\n");
    }
    /* Blueprints after the Components and their edges after the dependencies, so that a graph
     * without Blueprints is drawn as before them. */
    for (size_t i = 0; i < ncomponents; i++) {
        const graph_node *n = &g->items[i];
        if (n->blueprint && first_use(g, i)) {
            fprintf(out, "  ");
            dot_blueprint(out, n->blueprint);
            fprintf(out, " [label=");
            dot_blueprint(out, n->blueprint);
            fprintf(out, ", shape=note, style=filled, fillcolor=lightgrey];\n");
        }
    }
    for (size_t i = 0; i < ncomponents; i++) {
        const graph_node *n = &g->items[i];
        for (size_t k = 0; k < n->deps.len; k++) {
            fprintf(out, "  ");
            dot_quote(out, n->key);
            fprintf(out, " -> ");
            dot_quote(out, n->deps.items[k]);
            if (edge_in_cycle(dg, n->key, n->deps.items[k])) {
                fprintf(out, " [color=red, penwidth=2, label=\"cycle\"]");
            }
            fprintf(out, ";\n");
        }
    }
    for (size_t i = 0; i < ncomponents; i++) {
        const graph_node *n = &g->items[i];
        if (n->blueprint) {
            fprintf(out, "  ");
            dot_quote(out, n->key);
            fprintf(out, " -> ");
            dot_blueprint(out, n->blueprint);
            fprintf(out, " [style=dotted, arrowhead=empty, tooltip=\"its source\"];\n");
        }
    }
    fprintf(out, "}\n");
    co_depgraph_list_dispose(&cycles);
    co_depgraph_free(dg);
    return 0;
}

static int
graph_from_cluster(graph_nodes *g, const char *kubeconfig, const char *context, const char *ns)
{
    co_kube_config *cfg = NULL;
    int rc = co_kube_config_load(&cfg, kubeconfig, context);
    if (rc < 0) {
        return rc;
    }
    co_kube_client *client = NULL;
    co_kube_client_options opts = CO_KUBE_CLIENT_OPTIONS_INIT;
    opts.max_retries = 2;
    rc = co_kube_client_new(&client, cfg, &opts);
    co_kube_config_free(cfg);
    if (rc < 0) {
        return rc;
    }
    struct json_object *list = NULL;
    co_kube_ref ref = {"core.cs.sap.com/v1alpha1", "Component", ns, NULL};
    co_kube_list_options lo;
    memset(&lo, 0, sizeof(lo));
    rc = co_kube_list_all(&list, client, &ref, &lo);
    co_kube_client_free(client);
    if (rc < 0) {
        return rc;
    }
    struct json_object *items = NULL;
    if (co_json_get_array(&items, list, "items", NULL) == 0) {
        for (size_t i = 0; rc == 0 && i < json_object_array_length(items); i++) {
            rc = graph_add_component(g, json_object_array_get_idx(items, i), NULL);
        }
    }
    json_object_put(list);
    return rc;
}

int ctl_cli__run_graph(int argc, char **argv, FILE *out, FILE *err)
{
    const subcommand *cmd = ctl_cli__find("graph");
    const char *kubeconfig = NULL;
    const char *context = NULL;
    const char *ns = NULL;
    int help = 0;
    const co_flag flags[] = {
        {"kubeconfig", CO_FLAG_STRING, &kubeconfig, "PATH",
         "read the Components (and their states) from this cluster instead of files"},
        {"context", CO_FLAG_STRING, &context, "NAME",
         "kubeconfig context (default: its current-context)"},
        {"namespace", CO_FLAG_STRING, &ns, "NS",
         "with --kubeconfig: only this namespace (default: all); with files: the namespace of "
         "Components without one (default \"default\")"},
        {"help", CO_FLAG_BOOL, &help, NULL, "print this help and exit"},
    };
    int next = 0;
    int status =
        ctl_cli__parse_flags(&next, flags, CO_ARRAY_SIZE(flags), argc, argv, cmd, &help, out, err);
    if (status >= 0) {
        return status;
    }
    if (kubeconfig && next < argc) {
        fprintf(err, "component-controller graph: give manifest files or --kubeconfig, not both\n");
        return EXIT_USAGE;
    }
    if (!kubeconfig && next >= argc) {
        fprintf(err, "component-controller graph: expected manifest files or --kubeconfig\n");
        return EXIT_USAGE;
    }
    for (int i = next; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(err, "component-controller graph: flags must come before the files: %s\n",
                    argv[i]);
            return EXIT_USAGE;
        }
    }
    graph_nodes g;
    memset(&g, 0, sizeof(g));
    g.objects = json_object_new_array();
    int rc = 0;
    if (kubeconfig) {
        rc = graph_from_cluster(&g, kubeconfig, context, ns);
        if (rc < 0) {
            fprintf(err, "component-controller graph: %s: %s\n", kubeconfig, co_error_last());
        }
    } else {
        manifest_list all = {NULL, 0, 0};
        for (int i = next; rc == 0 && i < argc; i++) {
            rc = ctl_cli__read_manifests(&all, argv[i], false);
            if (rc < 0) {
                fprintf(err, "component-controller graph: %s\n", co_error_last());
            }
        }
        for (size_t i = 0; rc == 0 && i < all.len; i++) {
            if (ctl_cli__classify(all.items[i].obj) != OBJ_COMPONENT) {
                continue; /* other objects have no place in the graph */
            }
            rc = graph_add_component(&g, all.items[i].obj, ns ? ns : "default");
            if (rc < 0) {
                ctl_cli__print_place(err, &all.items[i]);
                fprintf(err, "error: %s\n", co_error_last());
            }
        }
        ctl_cli__manifests_dispose(&all);
    }
    if (rc == 0) {
        rc = print_dot(out, &g);
        if (rc < 0) {
            fprintf(err, "component-controller graph: %s\n", co_error_last());
        }
    }
    graph_dispose(&g);
    return rc < 0 ? EXIT_BAD_INPUT : 0;
}
