/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plain-HTTP listeners for metrics and probes (see ctl_http.h). The socket is bound here so
 * that a busy port fails with a clear message and port 0 can be read back; libmicrohttpd
 * then serves it from one internal thread. Only GET and HEAD are answered.
 */
#include "controller/ctl_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "co/util/error.h"

/* Responses are small: metrics text is the largest. */
#define CTL_HTTP_MAX_BODY ((size_t)64 * 1024 * 1024)

struct ctl_http {
    struct MHD_Daemon *daemon;
    int fd;
    int port;
    ctl_http_handler handler;
    void *payload;
};

bool ctl_http_disabled(const char *addr)
{
    return !addr || !*addr || strcmp(addr, "0") == 0;
}

static enum MHD_Result on_request(void *cls,
                                  struct MHD_Connection *conn,
                                  const char *url,
                                  const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    ctl_http *h = cls;
    co_buf body = CO_BUF_INIT(CTL_HTTP_MAX_BODY);
    int code = 405;
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
        code = h->handler(&body, url, h->payload);
    }
    if (code == 404 && body.len == 0 && co_buf_puts(&body, "404 page not found\n") < 0) {
        code = 500;
    }
    /* the body is handed over, not copied: a scrape of a thousand Components' metrics is
     * megabytes */
    size_t len = 0;
    char *text = co_buf_take(&body, &len);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    const char *ctype = "text/plain; charset=utf-8";
    if (strcmp(url, "/metrics") == 0) {
        ctype = "text/plain; version=0.0.4; charset=utf-8";
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return r;
}

static int split_addr(char **host_out, char **port_out, const char *addr)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1]) {
        return co_error_set(CO_EINVALID, "address \"%s\": want host:port or :port", addr);
    }
    const char *hs = addr, *he = colon;
    if (*hs == '[') {
        if (he == hs || he[-1] != ']') {
            return co_error_set(CO_EINVALID, "address \"%s\": unterminated IPv6 host", addr);
        }
        hs++;
        he--;
    }
    *host_out = he > hs ? co_xstrndup(hs, (size_t)(he - hs)) : NULL;
    *port_out = co_xstrdup(colon + 1);
    return 0;
}

int ctl_http_start(ctl_http **out, const char *addr, ctl_http_handler handler, void *payload)
{
    char *host = NULL, *port = NULL;
    struct addrinfo *ai = NULL;
    int fd = -1;
    int rc = split_addr(&host, &port, addr);
    if (rc < 0) {
        return rc;
    }
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0) {
        rc = co_error_set(CO_EINVALID, "address \"%s\": %s", addr, gai_strerror(gai));
        goto done;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        rc = co_error_set_os(CO_ERROR, "listen on \"%s\"", addr);
        goto done;
    }
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } bound_addr;
    memset(&bound_addr, 0, sizeof(bound_addr));
    socklen_t sl = sizeof(bound_addr);
    int bound = 0;
    if (getsockname(fd, &bound_addr.sa, &sl) == 0) {
        bound = bound_addr.sa.sa_family == AF_INET6 ? ntohs(bound_addr.in6.sin6_port)
                                                    : ntohs(bound_addr.in4.sin_port);
    }
    ctl_http *h = co_xcalloc(1, sizeof(*h));
    h->fd = fd;
    h->port = bound;
    h->handler = handler;
    h->payload = payload;
    h->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                         on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!h->daemon) {
        free(h);
        rc = co_error_set(CO_ERROR, "serve on \"%s\": libmicrohttpd did not start", addr);
        goto done;
    }
    fd = -1;
    *out = h;
    rc = 0;
done:
    if (fd >= 0) {
        close(fd);
    }
    if (ai) {
        freeaddrinfo(ai);
    }
    free(host);
    free(port);
    return rc;
}

int ctl_http_port(const ctl_http *h)
{
    return h->port;
}

void ctl_http_stop(ctl_http *h)
{
    if (!h) {
        return;
    }
    MHD_stop_daemon(h->daemon);
    close(h->fd);
    free(h);
}
