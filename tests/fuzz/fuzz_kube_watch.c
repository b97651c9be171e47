/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for watch streams: the input is served as the body of a watch answer, cut into
 * chunks whose sizes come from the input's first byte, through a minimal transport plugged
 * into the real client. Framing, event decoding, ERROR Status decoding and the line cap must
 * never crash, leak or hang, whatever arrives.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/error.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_watch.h"
#include "shared/src/kube/kube_int.h"

typedef struct fuzz_transport {
    co_kube_transport base;
    const uint8_t *data;
    size_t len;
} fuzz_transport;

static const char discovery[] =
    "{\"resources\":[{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"}]}";

static int fuzz_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    fuzz_transport *t = (fuzz_transport *)self;
    resp->status = 200;
    if (!strstr(req->path, "watch=1")) {
        return co_buf_put(&resp->body, discovery, sizeof(discovery) - 1);
    }
    size_t step = t->len ? (size_t)(t->data[0] % 64) + 1 : 1;
    const uint8_t *p = t->len ? t->data + 1 : t->data;
    size_t left = t->len ? t->len - 1 : 0;
    while (left > 0) {
        size_t n = left < step ? left : step;
        int rc = req->stream((const char *)p, n, req->stream_payload);
        if (rc < 0) {
            return rc;
        }
        p += n;
        left -= n;
        step = step * 3 % 97 + 1; /* vary the cuts */
    }
    return 0;
}

static void fuzz_free(co_kube_transport *self)
{
    free(self);
}

static int on_event(co_kube_event_type type, struct json_object *obj, void *payload)
{
    (void)payload;
    /* touch what an informer would read */
    (void)co_kube_event_type_name(type);
    (void)co_json_meta_name(obj);
    (void)co_json_meta_namespace(obj);
    (void)co_json_str(obj, "metadata", "resourceVersion", NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static co_kube_config *cfg;
    if (!cfg) {
        struct json_object *doc = json_tokener_parse(
            "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://f:1\"}}],"
            "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}],"
            "\"current-context\":\"x\"}");
        if (co_kube_config_from_json(&cfg, doc, NULL, NULL) < 0) {
            abort();
        }
        json_object_put(doc);
    }
    fuzz_transport *t = calloc(1, sizeof(*t));
    if (!t) {
        return 0;
    }
    t->base.send = fuzz_send;
    t->base.free = fuzz_free;
    t->data = data;
    t->len = size;
    co_kube_client *c = NULL;
    co_kube_client_options o = {.qps = -1, .max_retries = -1};
    if (co_kube_client_new_with_transport(&c, cfg, &t->base, &o) < 0) {
        abort();
    }
    co_kube_watch_options wo = {.resource_version = "1"};
    int rc = co_kube_watch(c, &(co_kube_ref){"v1", "ConfigMap", "ns", NULL}, &wo, on_event, NULL);
    if (rc > 0) {
        abort(); /* errors are negative */
    }
    co_kube_client_free(c);
    co_error_clear();
    return 0;
}
