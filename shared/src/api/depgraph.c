/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dependency graph: nodes in an array, found by "ns/name" through the string map
 * (co/util/strmap.h: keyed hash, the names are chosen by whoever creates Components), forward
 * edges (dependencies) and reverse edges (dependents) as index arrays. A node stays while a
 * Component occupies it or another node points to it (a missing target); when neither holds it
 * is deleted, so churn of short-lived names does not grow the table. Searches are iterative
 * (no recursion depth to exhaust on long chains) and bounded by the reachable sub-graph.
 */
#include "co/api/depgraph.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/api/component.h"
#include "co/util/error.h"
#include "co/util/strmap.h"
#include "co/json/jdoc.h"
#include "schema_lib.h"

typedef struct node {
    char *key;    /* NULL = free slot in the node array */
    int present;  /* a Component occupies the key */
    size_t *deps; /* forward edges (node indexes), no duplicates */
    size_t ndeps;
    size_t *rdeps; /* reverse edges */
    size_t nrdeps;
} node;

#define EMPTY SIZE_MAX

struct co_depgraph {
    node *nodes;
    size_t nnodes; /* used length of nodes (including free slots) */
    size_t cap;
    size_t *free_slots;
    size_t nfree;
    co_strmap index; /* key -> node index + 1 */
    size_t present;
};

void co_depgraph_list_dispose(co_depgraph_list *list)
{
    if (!list) {
        return;
    }
    for (size_t i = 0; i < list->len; i++) {
        free(list->items[i]);
    }
    free(list->items);
    list->items = NULL;
    list->len = 0;
}

static void list_push(co_depgraph_list *l, char *s)
{
    l->items = co_xreallocarray(l->items, l->len + 1, sizeof(char *));
    l->items[l->len++] = s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---------------------------------------------------------------------------------------------
 * Index
 * ------------------------------------------------------------------------------------------- */

static size_t find(const co_depgraph *g, const char *key)
{
    void *v = NULL;
    return co_strmap_find(&g->index, key, &v) ? (size_t)(uintptr_t)v - 1 : EMPTY;
}

static size_t intern(co_depgraph *g, const char *key)
{
    size_t found = find(g, key);
    if (found != EMPTY) {
        return found;
    }
    size_t idx;
    if (g->nfree > 0) {
        idx = g->free_slots[--g->nfree];
    } else {
        if (g->nnodes == g->cap) {
            g->cap = g->cap ? g->cap * 2 : 16;
            g->nodes = co_xreallocarray(g->nodes, g->cap, sizeof(node));
        }
        idx = g->nnodes++;
    }
    memset(&g->nodes[idx], 0, sizeof(node));
    g->nodes[idx].key = co_xstrdup(key);
    co_strmap_put(&g->index, key, (void *)(uintptr_t)(idx + 1));
    return idx;
}

/* Deletes node @p idx when nothing holds it any more. */
static void collect(co_depgraph *g, size_t idx)
{
    node *n = &g->nodes[idx];
    if (n->present || n->nrdeps > 0 || n->ndeps > 0) {
        return;
    }
    CO_ASSERT(co_strmap_remove(&g->index, n->key) != NULL);
    free(n->key);
    free(n->deps);
    free(n->rdeps);
    memset(n, 0, sizeof(*n));
    g->free_slots = co_xreallocarray(g->free_slots, g->nfree + 1, sizeof(size_t));
    g->free_slots[g->nfree++] = idx;
}

/* ---------------------------------------------------------------------------------------------
 * Life cycle and updates
 * ------------------------------------------------------------------------------------------- */

co_depgraph *co_depgraph_new(void)
{
    co_depgraph *g = co_xcalloc(1, sizeof(*g));
    g->index = (co_strmap)CO_STRMAP_INIT;
    return g;
}

void co_depgraph_free(co_depgraph *g)
{
    if (!g) {
        return;
    }
    for (size_t i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].key);
        free(g->nodes[i].deps);
        free(g->nodes[i].rdeps);
    }
    free(g->nodes);
    free(g->free_slots);
    co_strmap_dispose(&g->index);
    free(g);
}

size_t co_depgraph_size(const co_depgraph *g)
{
    return g->present;
}

static int key_ok(const char *key)
{
    const char *slash = key ? strchr(key, '/') : NULL;
    return slash && slash != key && slash[1] && !strchr(slash + 1, '/');
}

static int bad_key(const char *key)
{
    return co_error_set(CO_EINVALID, "invalid Component key \"%s\": expected namespace/name",
                        key ? key : "");
}

static void remove_edge(co_depgraph *g, size_t from, size_t to)
{
    node *t = &g->nodes[to];
    for (size_t i = 0; i < t->nrdeps; i++) {
        if (t->rdeps[i] == from) {
            t->rdeps[i] = t->rdeps[--t->nrdeps];
            break;
        }
    }
}

/* Detaches the outgoing edges of @p idx and returns the old targets (free() them), which the
 * caller collects once it no longer needs them. */
static size_t *detach_deps(co_depgraph *g, size_t idx, size_t *ndeps_out)
{
    node *n = &g->nodes[idx];
    size_t *deps = n->deps;
    size_t ndeps = n->ndeps;
    n->deps = NULL;
    n->ndeps = 0;
    for (size_t i = 0; i < ndeps; i++) {
        remove_edge(g, idx, deps[i]);
    }
    *ndeps_out = ndeps;
    return deps;
}

static void collect_all(co_depgraph *g, size_t idx, size_t *deps, size_t ndeps)
{
    for (size_t i = 0; i < ndeps; i++) {
        if (deps[i] != idx) {
            collect(g, deps[i]);
        }
    }
    free(deps);
}

static void clear_deps(co_depgraph *g, size_t idx)
{
    size_t ndeps = 0;
    size_t *deps = detach_deps(g, idx, &ndeps);
    collect_all(g, idx, deps, ndeps);
}

int co_depgraph_set(co_depgraph *g, const char *key, const char *const *deps, size_t ndeps)
{
    if (!key_ok(key)) {
        return bad_key(key);
    }
    for (size_t i = 0; i < ndeps; i++) {
        if (!key_ok(deps[i])) {
            return bad_key(deps[i]);
        }
    }
    size_t idx = intern(g, key);
    if (!g->nodes[idx].present) {
        g->nodes[idx].present = 1;
        g->present++;
    }
    /* Intern the targets first (this may move the node array), then rebuild the edges. */
    size_t *targets = co_xcalloc(ndeps ? ndeps : 1, sizeof(size_t));
    for (size_t i = 0; i < ndeps; i++) {
        targets[i] = intern(g, deps[i]);
    }
    /* The old targets are collected only after the new edges hold theirs: a missing target
     * that stays a dependency must keep its node. */
    size_t nold = 0;
    size_t *old = detach_deps(g, idx, &nold);
    node *n = &g->nodes[idx];
    n->deps = co_xcalloc(ndeps ? ndeps : 1, sizeof(size_t));
    for (size_t i = 0; i < ndeps; i++) {
        int dup = 0;
        for (size_t j = 0; j < n->ndeps; j++) {
            dup = dup || n->deps[j] == targets[i];
        }
        if (dup) {
            continue;
        }
        n->deps[n->ndeps++] = targets[i];
        node *t = &g->nodes[targets[i]];
        t->rdeps = co_xreallocarray(t->rdeps, t->nrdeps + 1, sizeof(size_t));
        t->rdeps[t->nrdeps++] = idx;
    }
    free(targets);
    collect_all(g, idx, old, nold);
    return 0;
}

void co_depgraph_remove(co_depgraph *g, const char *key)
{
    size_t idx = key ? find(g, key) : EMPTY;
    if (idx == EMPTY || !g->nodes[idx].present) {
        return;
    }
    g->nodes[idx].present = 0;
    g->present--;
    clear_deps(g, idx);
    collect(g, idx);
}

bool co_depgraph_contains(const co_depgraph *g, const char *key)
{
    size_t idx = key ? find(g, key) : EMPTY;
    return idx != EMPTY && g->nodes[idx].present;
}

/* ---------------------------------------------------------------------------------------------
 * Searches
 * ------------------------------------------------------------------------------------------- */

/* Breadth-first search from @p start over forward edges for @p goal; on success writes the
 * node sequence start..goal into a path string prefixed with @p prefix. */
static int bfs_path(char **out,
                    const co_depgraph *g,
                    size_t start,
                    size_t goal,
                    const char *prefix,
                    const unsigned char *allowed)
{
    size_t *parent = co_xcalloc(g->nnodes + 1, sizeof(size_t));
    size_t *queue = co_xcalloc(g->nnodes + 1, sizeof(size_t));
    size_t head = 0;
    size_t tail = 0;
    size_t last = EMPTY; /* the predecessor of goal on the path found */
    for (size_t i = 0; i < g->nnodes; i++) {
        parent[i] = EMPTY;
    }
    parent[start] = start;
    queue[tail++] = start;
    while (head < tail && last == EMPTY) {
        size_t cur = queue[head++];
        const node *n = &g->nodes[cur];
        for (size_t i = 0; i < n->ndeps; i++) {
            size_t nx = n->deps[i];
            if (allowed && !allowed[nx]) {
                continue;
            }
            if (nx == goal) {
                last = cur;
                break;
            }
            if (parent[nx] == EMPTY) {
                parent[nx] = cur;
                queue[tail++] = nx;
            }
        }
    }
    if (last != EMPTY) {
        /* goal, last, parent[last], ..., start; then printed backwards */
        size_t len = 0;
        queue[len++] = goal;
        for (size_t cur = last;; cur = parent[cur]) {
            queue[len++] = cur;
            if (cur == start) {
                break;
            }
        }
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        CO_ASSERT(co_buf_puts(&b, prefix) == 0);
        for (size_t i = len; i-- > 0;) {
            CO_ASSERT(co_buf_printf(&b, "%s%s", b.len ? " -> " : "", g->nodes[queue[i]].key) == 0);
        }
        *out = co_buf_take(&b, NULL);
    }
    free(parent);
    free(queue);
    return last != EMPTY;
}

int co_depgraph_check(char **cycle_out,
                      const co_depgraph *g,
                      const char *key,
                      const char *const *deps,
                      size_t ndeps)
{
    if (!key_ok(key)) {
        return bad_key(key);
    }
    size_t self = find(g, key);
    for (size_t i = 0; i < ndeps; i++) {
        if (!deps[i]) {
            continue;
        }
        if (strcmp(deps[i], key) == 0) {
            *cycle_out = co_xasprintf("%s -> %s", key, key);
            return co_error_set(CO_ECONFLICT, "dependency cycle: %s", *cycle_out);
        }
        size_t t = find(g, deps[i]);
        if (t == EMPTY || self == EMPTY) {
            /* a missing target has no edges; a new Component has no dependants */
            continue;
        }
        int existing = 0;
        for (size_t j = 0; j < g->nodes[self].ndeps; j++) {
            existing = existing || g->nodes[self].deps[j] == t;
        }
        if (existing) {
            continue;
        }
        char *tail = NULL;
        if (bfs_path(&tail, g, t, self, "", NULL)) {
            *cycle_out = co_xasprintf("%s -> %s", key, tail);
            free(tail);
            return co_error_set(CO_ECONFLICT, "dependency cycle: %s", *cycle_out);
        }
    }
    return 0;
}

bool co_depgraph_reaches(const co_depgraph *g, const char *from, const char *to)
{
    size_t a = from ? find(g, from) : EMPTY;
    size_t b = to ? find(g, to) : EMPTY;
    if (a == EMPTY || b == EMPTY) {
        return false;
    }
    if (a == b) {
        return true;
    }
    char *path = NULL;
    bool found = bfs_path(&path, g, a, b, "", NULL) != 0;
    free(path);
    return found;
}

int co_depgraph_cycle_of(char **cycle_out, const co_depgraph *g, const char *key)
{
    size_t self = key ? find(g, key) : EMPTY;
    if (self == EMPTY) {
        return co_error_set(CO_ENOTFOUND, "no cycle through %s", key ? key : "");
    }
    if (!bfs_path(cycle_out, g, self, self, "", NULL)) {
        return co_error_set(CO_ENOTFOUND, "no cycle through %s", key);
    }
    return 0;
}

/* Tarjan's strongly connected components, iteratively. comp[i] receives the component id. */
static size_t tarjan(const co_depgraph *g, size_t *comp)
{
    size_t n = g->nnodes;
    size_t *index = co_xcalloc(n ? n : 1, sizeof(size_t));
    size_t *low = co_xcalloc(n ? n : 1, sizeof(size_t));
    unsigned char *on_stack = co_xcalloc(n ? n : 1, 1);
    size_t *stack = co_xcalloc(n ? n : 1, sizeof(size_t));
    size_t *call = co_xcalloc(n ? n : 1, sizeof(size_t)); /* node per frame */
    size_t *edge = co_xcalloc(n ? n : 1, sizeof(size_t)); /* next edge per frame */
    size_t sp = 0;
    size_t next_index = 1;
    size_t ncomp = 0;
    for (size_t i = 0; i < n; i++) {
        comp[i] = EMPTY;
    }
    for (size_t root = 0; root < n; root++) {
        if (!g->nodes[root].key || index[root]) {
            continue;
        }
        size_t depth = 0;
        call[0] = root;
        edge[0] = 0;
        index[root] = low[root] = next_index++;
        stack[sp++] = root;
        on_stack[root] = 1;
        while (1) {
            size_t v = call[depth];
            const node *nv = &g->nodes[v];
            if (edge[depth] < nv->ndeps) {
                size_t w = nv->deps[edge[depth]++];
                if (!index[w]) {
                    index[w] = low[w] = next_index++;
                    stack[sp++] = w;
                    on_stack[w] = 1;
                    depth++;
                    call[depth] = w;
                    edge[depth] = 0;
                } else if (on_stack[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            if (low[v] == index[v]) {
                size_t w;
                do {
                    w = stack[--sp];
                    on_stack[w] = 0;
                    comp[w] = ncomp;
                } while (w != v);
                ncomp++;
            }
            if (depth == 0) {
                break;
            }
            depth--;
            size_t parent = call[depth];
            if (low[v] < low[parent]) {
                low[parent] = low[v];
            }
        }
    }
    free(index);
    free(low);
    free(on_stack);
    free(stack);
    free(call);
    free(edge);
    return ncomp;
}

int co_depgraph_find_cycles(co_depgraph_list *out, const co_depgraph *g)
{
    size_t n = g->nnodes;
    co_depgraph_list res = {NULL, 0};
    size_t *comp = co_xcalloc(n ? n : 1, sizeof(size_t));
    size_t ncomp = tarjan(g, comp);
    size_t *size = co_xcalloc(ncomp ? ncomp : 1, sizeof(size_t));
    size_t *first = co_xcalloc(ncomp ? ncomp : 1, sizeof(size_t));
    unsigned char *allowed = co_xcalloc(n ? n : 1, 1);
    for (size_t c = 0; c < ncomp; c++) {
        first[c] = EMPTY;
    }
    for (size_t i = 0; i < n; i++) {
        if (comp[i] == EMPTY) {
            continue;
        }
        size_t c = comp[i];
        size[c]++;
        if (first[c] == EMPTY || strcmp(g->nodes[i].key, g->nodes[first[c]].key) < 0) {
            first[c] = i;
        }
    }
    for (size_t c = 0; c < ncomp; c++) {
        size_t start = first[c];
        const node *ns = &g->nodes[start];
        int self_loop = 0;
        for (size_t j = 0; j < ns->ndeps; j++) {
            self_loop = self_loop || ns->deps[j] == start;
        }
        if (size[c] < 2 && !self_loop) {
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            allowed[i] = comp[i] == c;
        }
        char *path = NULL;
        CO_ASSERT(bfs_path(&path, g, start, start, "", allowed));
        list_push(&res, path);
    }
    if (res.len > 1) {
        qsort(res.items, res.len, sizeof(char *), cmp_str);
    }
    free(comp);
    free(size);
    free(first);
    free(allowed);
    *out = res;
    return 0;
}

int co_depgraph_dependents(co_depgraph_list *out, const co_depgraph *g, const char *key)
{
    co_depgraph_list res = {NULL, 0};
    size_t idx = key ? find(g, key) : EMPTY;
    if (idx != EMPTY) {
        const node *n = &g->nodes[idx];
        for (size_t i = 0; i < n->nrdeps; i++) {
            list_push(&res, co_xstrdup(g->nodes[n->rdeps[i]].key));
        }
        if (res.len > 1) {
            qsort(res.items, res.len, sizeof(char *), cmp_str);
        }
    }
    *out = res;
    return 0;
}

int co_depgraph_deps(co_depgraph_list *out, const co_depgraph *g, const char *key)
{
    size_t idx = key ? find(g, key) : EMPTY;
    if (idx == EMPTY || !g->nodes[idx].present) {
        return co_error_set(CO_ENOTFOUND, "no Component %s in the graph", key ? key : "");
    }
    co_depgraph_list res = {NULL, 0};
    const node *n = &g->nodes[idx];
    for (size_t i = 0; i < n->ndeps; i++) {
        list_push(&res, co_xstrdup(g->nodes[n->deps[i]].key));
    }
    *out = res;
    return 0;
}

int co_depgraph_missing(co_depgraph_list *out,
                        const co_depgraph *g,
                        const char *const *deps,
                        size_t ndeps)
{
    co_depgraph_list res = {NULL, 0};
    for (size_t i = 0; i < ndeps; i++) {
        if (deps[i] && !co_depgraph_contains(g, deps[i])) {
            list_push(&res, co_xstrdup(deps[i]));
        }
    }
    *out = res;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Components as JSON
 * ------------------------------------------------------------------------------------------- */

/* Appends the key of dependency @p dns / @p dname of a Component in namespace @p ns, unless it
 * names no Component (no name, a slash in a part) or is there already. */
static void push_dep(co_depgraph_list *res, const char *dns, const char *dname, const char *ns)
{
    if (!dname || !dname[0] || strchr(dname, '/') || (dns && strchr(dns, '/'))) {
        return;
    }
    char *key = co_xjoin(dns && dns[0] ? dns : ns, '/', dname);
    for (size_t j = 0; j < res->len; j++) {
        if (strcmp(res->items[j], key) == 0) {
            free(key);
            return;
        }
    }
    list_push(res, key);
}

int co_depgraph_component_deps(co_depgraph_list *out, const co_component *c)
{
    co_depgraph_list res = {NULL, 0};
    if (!c->ns || !c->ns[0]) {
        return co_error_set(CO_EINVALID, "Component without namespace");
    }
    for (size_t i = 0; i < c->spec.n_dependencies; i++) {
        push_dep(&res, c->spec.dependencies[i].ns, c->spec.dependencies[i].name, c->ns);
    }
    *out = res;
    return 0;
}

int co_depgraph_object_deps_jv(co_depgraph_list *out,
                               char **key_out,
                               const co_jv *obj,
                               const char *ns)
{
    co_depgraph_list res = {NULL, 0};
    const co_jv *meta = co_jv__field(obj, "metadata");
    const char *name = co_jv_str(meta, "name");
    if (co_component_version_jv(obj) == CO_API_UNKNOWN) {
        return co_error_set(CO_EINVALID, "not a Component");
    }
    if (!ns) {
        ns = co_jv_str(meta, "namespace");
    }
    if (!ns || !ns[0] || !name || !name[0]) {
        return co_error_set(CO_EINVALID, "Component without namespace or name");
    }
    /* spec.dependencies has the same place and shape in both versions */
    const co_jv *deps = co_jv__field(co_jv__field(obj, "spec"), "dependencies");
    if (co_jv_is(deps, CO_JV_ARRAY)) {
        CO_JV_EACH (d, deps) {
            push_dep(&res, co_jv_str(d, "namespace"), co_jv_str(d, "name"), ns);
        }
    }
    if (key_out) {
        *key_out = co_xjoin(ns, '/', name);
    }
    *out = res;
    return 0;
}

int co_depgraph_object_deps(co_depgraph_list *out,
                            char **key_out,
                            const struct json_object *obj,
                            const char *ns)
{
    co_jdoc *doc = co_jdoc_of_json(obj);
    int rc = co_depgraph_object_deps_jv(out, key_out, co_jdoc_root(doc), ns);
    co_jdoc_free(doc);
    return rc;
}

int co_depgraph_set_object(co_depgraph *g, const struct json_object *obj, const char *ns)
{
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    int rc = co_depgraph_object_deps(&deps, &key, obj, ns);
    if (rc == 0) {
        rc = co_depgraph_set(g, key, (const char *const *)deps.items, deps.len);
    }
    co_depgraph_list_dispose(&deps);
    free(key);
    return rc;
}

int co_depgraph_check_object(char **cycle_out,
                             const co_depgraph *g,
                             const struct json_object *obj,
                             const char *ns)
{
    co_depgraph_list deps = {NULL, 0};
    char *key = NULL;
    int rc = co_depgraph_object_deps(&deps, &key, obj, ns);
    if (rc == 0) {
        rc = co_depgraph_check(cycle_out, g, key, (const char *const *)deps.items, deps.len);
    }
    co_depgraph_list_dispose(&deps);
    free(key);
    return rc;
}

/* A key the owner of @p key may read about: same namespace, or one of its own dependencies. */
static int
visible_key(const char *k, size_t klen, const char *key, const char *const *deps, size_t ndeps)
{
    const char *slash = strchr(key, '/');
    size_t nslen = slash ? (size_t)(slash - key) : 0;
    if (slash && klen > nslen && memcmp(k, key, nslen) == 0 && k[nslen] == '/') {
        return 1;
    }
    for (size_t i = 0; i < ndeps; i++) {
        if (strlen(deps[i]) == klen && memcmp(deps[i], k, klen) == 0) {
            return 1;
        }
    }
    return 0;
}

char *
co_depgraph_redact_path(const char *path, const char *key, const char *const *deps, size_t ndeps)
{
    static const char sep[] = " -> ";
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    const char *p = path;
    for (;;) {
        const char *end = strstr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (visible_key(p, len, key, deps, ndeps)) {
            CO_ASSERT(co_buf_put(&b, p, len) == 0);
        } else {
            CO_ASSERT(co_buf_puts(&b, "(a Component in another namespace)") == 0);
        }
        if (!end) {
            break;
        }
        CO_ASSERT(co_buf_puts(&b, sep) == 0);
        p = end + strlen(sep);
    }
    return co_buf_take(&b, NULL);
}
