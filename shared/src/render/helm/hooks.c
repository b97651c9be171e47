/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator has no Helm release and no hook runner: hooks become ordinary objects placed in
 * apply waves before or after the chart's other objects, reconciled once (install hooks) or on
 * every component change (upgrade hooks), recreated instead of updated (before-hook-creation)
 * and purged after their wave (hook-succeeded). The mapping is that of the Go original
 * (docs/behaviour.md, "Helm hooks"); `helm.sh/resource-policy: keep` becomes delete-policy orphan.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "co/util/error.h"
#include "co/render/helm.h"
#include "co/json/json.h"
#include "helm_int.h"

#define OP_PREFIX "component-operator.cs.sap.com/"

enum {
    HK_PRE_INSTALL = 1 << 0,
    HK_POST_INSTALL = 1 << 1,
    HK_PRE_UPGRADE = 1 << 2,
    HK_POST_UPGRADE = 1 << 3,
    HK_DELETE = 1 << 4,
    HK_IGNORED = 1 << 5, /* test, test-success, pre-rollback, post-rollback */
};

/* "Kind namespace/name" of @p obj for messages (free with free()). */
static char *describe(struct json_object *obj)
{
    const char *kind = json_object_get_string(co_json_get(obj, "kind", NULL));
    const char *ns = json_object_get_string(co_json_get(obj, "metadata", "namespace", NULL));
    const char *name = json_object_get_string(co_json_get(obj, "metadata", "name", NULL));
    return co_xasprintf("%s %s%s%s", kind ? kind : "object", ns ? ns : "", ns ? "/" : "",
                        name ? name : "");
}

/* Splits a comma list into trimmed, lower-cased items; calls @p fn for each non-empty one.
 * Returns the first negative result of @p fn. */
static int each_item(const char *list, int (*fn)(void *ctx, const char *item), void *ctx)
{
    char *copy = co_xstrdup(list);
    int rc = 0;
    char *p = copy;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) {
            *comma = '\0';
        }
        while (*p == ' ' || *p == '\t' || *p == '\n') {
            p++;
        }
        size_t n = strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\n')) {
            p[--n] = '\0';
        }
        for (char *q = p; *q; q++) {
            if (*q >= 'A' && *q <= 'Z') {
                *q = (char)(*q - 'A' + 'a');
            }
        }
        if (*p) {
            rc = fn(ctx, p);
            if (rc < 0) {
                break;
            }
        }
        if (!comma) {
            break;
        }
        p = comma + 1;
    }
    free(copy);
    return rc;
}

typedef struct hook_ctx {
    unsigned types;
    bool succeeded;
    bool before_creation;
    bool failed;
    const char *what;
} hook_ctx;

static int add_type(void *ctx, const char *t)
{
    hook_ctx *h = ctx;
    if (strcmp(t, "pre-install") == 0) {
        h->types |= HK_PRE_INSTALL;
    } else if (strcmp(t, "post-install") == 0) {
        h->types |= HK_POST_INSTALL;
    } else if (strcmp(t, "pre-upgrade") == 0) {
        h->types |= HK_PRE_UPGRADE;
    } else if (strcmp(t, "post-upgrade") == 0) {
        h->types |= HK_POST_UPGRADE;
    } else if (strcmp(t, "pre-delete") == 0 || strcmp(t, "post-delete") == 0) {
        h->types |= HK_DELETE;
    } else if (strcmp(t, "test") == 0 || strcmp(t, "test-success") == 0 ||
               strcmp(t, "pre-rollback") == 0 || strcmp(t, "post-rollback") == 0) {
        h->types |= HK_IGNORED;
    } else {
        return co_error_set(CO_EINVALID, "%s: annotation helm.sh/hook: unknown hook type \"%s\"",
                            h->what, t);
    }
    return 0;
}

static int add_policy(void *ctx, const char *p)
{
    hook_ctx *h = ctx;
    if (strcmp(p, "hook-succeeded") == 0) {
        h->succeeded = true;
    } else if (strcmp(p, "before-hook-creation") == 0) {
        h->before_creation = true;
    } else if (strcmp(p, "hook-failed") == 0) {
        h->failed = true;
    } else {
        return co_error_set(CO_EINVALID,
                            "%s: annotation helm.sh/hook-delete-policy: unknown policy \"%s\"",
                            h->what, p);
    }
    return 0;
}

/* Sets an operator annotation unless the chart already set it (allowed only on opt-in). */
static void set_annotation(struct json_object *ann, const char *key, const char *value)
{
    char *full = co_xasprintf(OP_PREFIX "%s", key);
    if (!json_object_object_get_ex(ann, full, NULL)) {
        json_object_object_add(ann, full, json_object_new_string(value));
    }
    free(full);
}

static int
map_hook(bool *keep, struct json_object *ann, const char *hook, int64_t revision, const char *what)
{
    hook_ctx h = {.what = what};
    int rc = each_item(hook, add_type, &h);
    if (rc < 0) {
        return rc;
    }
    if (h.types & HK_DELETE) {
        return co_error_set(CO_EINVALID,
                            "%s: delete hooks (pre-delete, post-delete) are not supported", what);
    }
    unsigned install = h.types & (HK_PRE_INSTALL | HK_POST_INSTALL);
    unsigned upgrade = h.types & (HK_PRE_UPGRADE | HK_POST_UPGRADE);
    if (!install && !upgrade) {
        *keep = false; /* test and rollback hooks, or an empty list */
        return 0;
    }
    int64_t weight = 0;
    struct json_object *w = NULL;
    if (json_object_object_get_ex(ann, "helm.sh/hook-weight", &w) && w) {
        const char *ws = json_object_get_string(w);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(ws, &end, 10);
        if (errno != 0 || end == ws || *end != '\0' || v < -100 || v > 100) {
            return co_error_set(CO_EINVALID,
                                "%s: annotation helm.sh/hook-weight: \"%s\" is not an integer "
                                "between -100 and 100",
                                what, ws);
        }
        weight = v;
    }
    struct json_object *dp = NULL;
    if (json_object_object_get_ex(ann, "helm.sh/hook-delete-policy", &dp) && dp) {
        rc = each_item(json_object_get_string(dp), add_policy, &h);
        if (rc < 0) {
            return rc;
        }
    } else {
        h.before_creation = true;
    }
    if (h.failed) {
        return co_error_set(CO_EINVALID,
                            "%s: annotation helm.sh/hook-delete-policy: hook-failed is not "
                            "supported",
                            what);
    }

    const char *reconcile;
    bool pre;
    if (revision <= 1) {
        if (!install) {
            *keep = false; /* upgrade-only hook on install */
            return 0;
        }
        reconcile = "once";
        pre = (install & HK_PRE_INSTALL) != 0;
    } else if (upgrade) {
        reconcile = "on-object-or-component-change";
        pre = (upgrade & HK_PRE_UPGRADE) != 0;
    } else {
        reconcile = "once";
        pre = (install & HK_PRE_INSTALL) != 0;
    }
    char num[32];
    snprintf(num, sizeof(num), "%lld", (long long)(pre ? weight - 101 : weight + 101));
    set_annotation(ann, "reconcile-policy", reconcile);
    set_annotation(ann, "apply-order", num);
    if (h.succeeded) {
        bool any_post = (h.types & (HK_POST_INSTALL | HK_POST_UPGRADE)) != 0;
        set_annotation(ann, "purge-order", any_post ? "201" : "-1");
    }
    if (h.before_creation) {
        set_annotation(ann, "update-policy", "recreate");
    }
    return 0;
}

int co_helm_map_object(bool *keep, struct json_object *obj, int64_t revision, unsigned flags)
{
    int rc = 0;
    char *what = NULL;
    struct json_object *ann = co_json_get(obj, "metadata", "annotations", NULL);
    *keep = true;
    if (!ann || !json_object_is_type(ann, json_type_object)) {
        return 0;
    }
    what = describe(obj);
    if (!(flags & CO_HELM_ALLOW_OPERATOR_ANNOTATIONS)) {
        json_object_object_foreach (ann, key, val) {
            (void)val;
            if (strncmp(key, OP_PREFIX, strlen(OP_PREFIX)) == 0) {
                rc = co_error_set(CO_EINVALID,
                                  "%s: annotation %s must not be set by the chart (the Component "
                                  "has not opted in to operator annotations in Helm charts)",
                                  what, key);
                goto done;
            }
        }
    }
    struct json_object *keepv = NULL;
    if (json_object_object_get_ex(ann, "helm.sh/resource-policy", &keepv)) {
        const char *v = keepv ? json_object_get_string(keepv) : "";
        if (strcmp(v, "keep") != 0) {
            rc = co_error_set(CO_EINVALID,
                              "%s: annotation helm.sh/resource-policy: unsupported value \"%s\" "
                              "(only keep)",
                              what, v);
            goto done;
        }
        set_annotation(ann, "delete-policy", "orphan");
    }
    struct json_object *hook = NULL;
    if (json_object_object_get_ex(ann, "helm.sh/hook", &hook) && hook) {
        rc = map_hook(keep, ann, json_object_get_string(hook), revision, what);
    }
done:
    free(what);
    return rc;
}
