/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private declarations shared by the kube_*.c files: the configuration's fields (read by the
 * transport and the client), the client's shared core, small JSON and string helpers, a string
 * hash map for caches and indexes, and the internals unit tests reach (token bucket, backoff,
 * time formatting).
 */
#ifndef CO_KUBE_INT_H
#define CO_KUBE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/strmap.h"
#include "co/util/buf.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_transport.h"

struct json_object;

/* --- configuration ---------------------------------------------------------------------- */

/** A byte string that may hold a secret; wiped when freed. */
typedef struct co_kube_blob {
    char *data; /* NUL-terminated for convenience; NULL when absent */
    size_t len;
} co_kube_blob;

struct co_kube_config {
    char *server;          /* https://host:port[/prefix], no trailing slash */
    char *tls_server_name; /* SNI and certificate name to expect, or NULL */
    char *context;         /* selected context, NULL in-cluster */
    char *namespace;       /* never NULL */
    char *proxy_url;       /* or NULL */
    int insecure;          /* insecure-skip-tls-verify */
    int in_cluster;
    co_kube_blob ca;          /* PEM */
    co_kube_blob client_cert; /* PEM */
    co_kube_blob client_key;  /* PEM */
    char *token;              /* static bearer token (secret) */
    char *token_file;         /* re-read periodically and after a 401 */
    char *username;           /* basic authentication */
    char *password;           /* (secret) */
    char *impersonate_user;
    char **impersonate_groups;
    size_t nimpersonate_groups;
    int untrusted; /* from co_kube_config_from_untrusted_json(): the network deny-list applies */
};

/** Deep copy of a configuration. */
co_kube_config *co_kube_config__dup(const co_kube_config *src);

/** Reads a whole file into @p out (capped at @p cap). @return 0, CO_ENOTFOUND, CO_ETOOBIG,
 * CO_ERROR. */
int co_kube__read_file(co_buf *out, const char *path, size_t cap);

/** Files co_kube__read_file() tried to open since the process started: tests prove with it that
 * an untrusted kubeconfig never makes the loader touch a file. */
unsigned long co_kube__files_opened(void);

/** Counters of the libcurl transport: requests sent, connections opened, answers over
 * HTTP/2. @return 0, or CO_EINVALID when @p t is another transport. */
int co_kube__curl_stats(const co_kube_transport *t,
                        unsigned long *requests,
                        unsigned long *connects,
                        unsigned long *h2);

/** Counters of the GnuTLS transport: requests sent and connections opened.
 * @return 0, or CO_EINVALID when @p t is another transport. */
int co_kube__gnutls_stats(const co_kube_transport *t,
                          unsigned long *requests,
                          unsigned long *connects);

/* --- small helpers ---------------------------------------------------------------------- */

/** The object member @p key of @p obj, or NULL. Borrowed. */
struct json_object *co_kube__obj(const struct json_object *obj, const char *key);

/** Appends @p s percent-encoded for a query value or a path segment. */
int co_kube__escape(co_buf *out, const char *s);

/** Parses JSON text into a tree with the project's nesting cap. @return 0 or CO_EINVALID. */
int co_kube__parse_json(struct json_object **out, const char *data, size_t len);

/**
 * Like co_kube__parse_json(), leaving out the members @p skip names (co_json_parse_skip(); NULL:
 * everything is built). Errors then read "line L, column C: ...".
 */
int co_kube__parse_json_skip(struct json_object **out,
                             const char *data,
                             size_t len,
                             const char *const *const *skip);

/** Key lists leaving out metadata.managedFields of a list's items and of a watch event's object. */
extern const char *const *const co_kube__skip_list_managed_fields[];
extern const char *const *const co_kube__skip_event_managed_fields[];

/** Monotonic milliseconds. */
int64_t co_kube__now_ms(void);

/** Wall-clock time in microseconds since the epoch (co_time_now()). */
int64_t co_kube__wall_us(void);

/** A random double in [0, 1) (thread-safe). */
double co_kube__random(void);

/** Sleeps @p ms milliseconds or until *@p stop becomes nonzero (checked every 50 ms) when
 * @p stop is not NULL. @return nonzero when stopped. */
int co_kube__sleep_ms(int64_t ms, const volatile int *stop);

/* --- rate limiting and backoff ---------------------------------------------------------- */

/** A token bucket: @ref qps tokens per second up to @ref burst. */
typedef struct co_kube_bucket {
    pthread_mutex_t lock;
    double qps;    /* <= 0: unlimited */
    double burst;  /* bucket size */
    double tokens; /* available now */
    int64_t last_ms;
} co_kube_bucket;

void co_kube_bucket_init(co_kube_bucket *b, double qps, int burst, int64_t now_ms);
void co_kube_bucket_dispose(co_kube_bucket *b);

/** Takes one token at @p now_ms; returns how many milliseconds the caller must wait before
 * proceeding (0 when a token was available). The token is reserved either way. */
int64_t co_kube_bucket_reserve(co_kube_bucket *b, int64_t now_ms);

/** Exponential backoff with full jitter: attempt 0.. → a delay in [base/2, min(cap, base*2^n)].
 * @p r is a random number in [0,1). */
int64_t co_kube_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, double r);

/* --- the client ------------------------------------------------------------------------- */

/** State shared by a client and the clients impersonating through it. */
typedef struct co_kube_core {
    int refs; /* guarded by lock */
    pthread_mutex_t lock;
    co_kube_config *cfg;
    co_kube_transport *transport;
    co_kube_bucket bucket;
    /* token */
    pthread_mutex_t token_lock;
    char *token;           /* current bearer token (secret), or NULL */
    int64_t token_read_ms; /* when token_file was last read */
    long token_reload_ms;
    /* discovery: "group/version" -> struct co_kube_gv_doc * */
    pthread_mutex_t disc_lock;
    co_strmap discovery;
    /* the whole listing (co_kube_client_api_resources()), guarded by disc_lock; one thread
     * fetches it at a time, holding disc_fetch_lock (never disc_lock) over the requests */
    pthread_mutex_t disc_fetch_lock;
    co_kube_api_listing *listing; /* one reference held here, or NULL */
    char **listing_gvs;           /* the group/versions it was read for */
    size_t nlisting_gvs;
    int64_t listing_ms;
    int64_t listing_checked_ms;       /* when /api and /apis last matched listing_gvs */
    int listing_rechecking;           /* a thread is reading /api and /apis again for the listing */
    pthread_cond_t listing_rechecked; /* signalled (disc_lock) when that thread is done */
    uint64_t listing_gen; /* counts drops, so that a fetch never stores over a newer drop */
    /* GET /version (co_kube_client_server_version()), guarded by disc_lock */
    struct json_object *version;
    int64_t version_ms;
    /* settings */
    char *user_agent;
    long connect_timeout_ms;
    long request_timeout_ms;
    int max_retries;
    long retry_base_ms;
} co_kube_core;

struct co_kube_client {
    co_kube_core *core;
    co_kube_client *parent; /* for impersonating clients, else NULL */
    char *impersonate_user;
    char **impersonate_groups;
    size_t nimpersonate_groups;
    int untrusted; /* from co_kube_config_from_untrusted_json(): the network deny-list applies */
};

/** A request as the client pipeline sees it. */
/* The Accept values of metadata-only reads: the API server answers a collection with a
 * PartialObjectMetadataList and a watch with PartialObjectMetadata events, and refuses (406)
 * rather than sending whole objects. No fallback type is offered, on purpose: a Secret's data
 * must not come back to a caller that asked for metadata. */
#define CO_KUBE__ACCEPT_METADATA "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
#define CO_KUBE__ACCEPT_METADATA_LIST                                                              \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

typedef struct co_kube_call {
    const char *method;
    const char *path;
    const char *content_type;
    const char *accept; /* the Accept header's value; NULL: application/json */
    const char *body;
    size_t body_len;
    int idempotent;           /* may be retried after an ambiguous failure */
    int watch;                /* streaming: no overall timeout, low-speed limit */
    long low_speed_time_s;    /* for watches */
    co_kube_stream_cb stream; /* for watches */
    void *stream_payload;
    co_kube_cancel_cb cancelled;
    void *cancel_payload;
} co_kube_call;

/**
 * Runs @p call through rate limiting, authentication and retries; on a 2xx answer leaves the
 * body in @p resp (unless streamed). On failure sets the error (and the thread's Status).
 * @p resp must be initialised by the caller and is disposed by the caller.
 */
int co_kube__do(co_kube_client *client, const co_kube_call *call, co_kube_response *resp);

/** Maps an HTTP answer that is not 2xx to an error code, decoding a Status body, setting the
 * thread's Status and the error message (prefixed with method and path). */
int co_kube__fail_from_response(const char *method,
                                const char *path,
                                int http_status,
                                const char *body,
                                size_t body_len);

/** Maps a decoded Status object to an error code and records it as the thread's Status;
 * used for watch ERROR events. */
int co_kube__fail_from_status(const char *context, const struct json_object *status);

/** co_kube_client_path(); @p require_namespace also refuses a namespaced collection without
 * a namespace (creating needs one, listing does not). */
int co_kube__path(co_buf *out,
                  co_kube_client *client,
                  const co_kube_ref *ref,
                  const char *subresource,
                  int require_namespace);

/** Tests set this to see every delay the request pipeline waits (rate limit, backoff,
 * Retry-After) instead of measuring time. */
extern void (*co_kube__delay_observer)(int64_t ms);

/** Clears the thread's Status slot. */
void co_kube__status_clear(void);

#endif
