/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layer under the webhook's TLS sessions. Reads: bytes come out in order whatever sizes
 * GnuTLS asks for, one recv() serves a whole record (and whatever else had arrived), and
 * "would block" is reported only once the buffer and the socket are both empty. Writes: what
 * is sent while corked goes out at the flush as one record in one sendmsg(), pushed through a
 * corked TCP socket; a socket that takes no more fails the flush and keeps the order; a broken
 * connection fails it too. Driven directly over a socket pair, then under a real GnuTLS session
 * pair (anonymous key exchange, so no certificate is needed).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"
#include "webhook/wh_tlsio.h"

/* A connected stream pair; [0] non-blocking (the server's side, as libmicrohttpd has it). */
static void socket_pair(int fds[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    assert_int_equal(fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0);
}

/* The same over TCP on the loopback, for what only TCP does (corking), Nagle off on both ends
 * as the server has it. */
static void tcp_pair(int fds[2])
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(l, (struct sockaddr *)&a, len), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    fds[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(fds[1], (struct sockaddr *)&a, len), 0);
    fds[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    assert_true(fds[0] >= 0);
    close(l);
    int on = 1;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), 0);
    }
}

static void write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

static void test_wh_tlsio__hands_on_read_ahead_bytes_and_blocks_only_when_drained(void **state)
{
    (void)state;
    int fds[2];
    socket_pair(fds);
    wh_tlsio *r = wh_tlsio_attach(NULL, fds[0]);
    write_all(fds[1], "0123456789", 10);

    char buf[64] = {0};
    assert_int_equal(wh_tlsio_pull(r, buf, 5), 5);
    assert_memory_equal(buf, "01234", 5);
    assert_int_equal(wh_tlsio_reads(r), 1);
    assert_int_equal(wh_tlsio_buffered(r), 5);

    /* the rest comes from the buffer: no second read */
    assert_int_equal(wh_tlsio_pull(r, buf, sizeof(buf)), 5);
    assert_memory_equal(buf, "56789", 5);
    assert_int_equal(wh_tlsio_reads(r), 1);
    assert_int_equal(wh_tlsio_buffered(r), 0);

    /* now both are empty: would block */
    errno = 0;
    assert_int_equal(wh_tlsio_pull(r, buf, sizeof(buf)), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(wh_tlsio_reads(r), 2);

    /* then the end of the stream */
    write_all(fds[1], "ab", 2);
    close(fds[1]);
    assert_int_equal(wh_tlsio_pull(r, buf, 1), 1);
    assert_int_equal(buf[0], 'a');
    assert_int_equal(wh_tlsio_pull(r, buf, 1), 1);
    assert_int_equal(buf[0], 'b');
    assert_int_equal(wh_tlsio_pull(r, buf, 1), 0);
    wh_tlsio_free(r);
    close(fds[0]);
}

static void test_wh_tlsio__large_reads_go_straight_to_the_caller(void **state)
{
    (void)state;
    int fds[2];
    socket_pair(fds);
    wh_tlsio *r = wh_tlsio_attach(NULL, fds[0]);
    size_t total = (size_t)3 * WH_TLSIO_CHUNK;
    char *data = co_xmalloc(total);
    for (size_t i = 0; i < total; i++) {
        data[i] = (char)(i * 7 + i / 251);
    }
    write_all(fds[1], data, total);
    close(fds[1]);

    /* a small read first (buffers a chunk), then reads as large as a chunk */
    char *got = co_xmalloc(total);
    size_t have = 0;
    ssize_t n = wh_tlsio_pull(r, got, 5);
    assert_int_equal(n, 5);
    have += 5;
    while ((n = wh_tlsio_pull(r, got + have,
                              total - have > WH_TLSIO_CHUNK ? WH_TLSIO_CHUNK : total - have)) > 0) {
        have += (size_t)n;
    }
    assert_int_equal(n, 0);
    assert_int_equal(have, total);
    assert_memory_equal(got, data, total);
    free(got);
    free(data);
    wh_tlsio_free(r);
    close(fds[0]);
}

/* --- under GnuTLS ----------------------------------------------------------------------------- */

typedef struct tls_pair {
    int fds[2];
    gnutls_session_t server, client;
    gnutls_anon_server_credentials_t scred;
    gnutls_anon_client_credentials_t ccred;
    wh_tlsio *r;
} tls_pair;

static const char *const anon_priority = "NORMAL:-VERS-ALL:+VERS-TLS1.2:+ANON-ECDH";

static void tls_pair_open(tls_pair *t, int tcp)
{
    if (tcp) {
        tcp_pair(t->fds);
    } else {
        socket_pair(t->fds);
    }
    assert_int_equal(fcntl(t->fds[1], F_SETFL, fcntl(t->fds[1], F_GETFL) | O_NONBLOCK), 0);
    assert_int_equal(gnutls_anon_allocate_server_credentials(&t->scred), 0);
    assert_int_equal(gnutls_anon_allocate_client_credentials(&t->ccred), 0);
    assert_int_equal(gnutls_init(&t->server, GNUTLS_SERVER | GNUTLS_NONBLOCK), 0);
    assert_int_equal(gnutls_init(&t->client, GNUTLS_CLIENT | GNUTLS_NONBLOCK), 0);
    assert_int_equal(gnutls_priority_set_direct(t->server, anon_priority, NULL), 0);
    assert_int_equal(gnutls_priority_set_direct(t->client, anon_priority, NULL), 0);
    assert_int_equal(gnutls_credentials_set(t->server, GNUTLS_CRD_ANON, t->scred), 0);
    assert_int_equal(gnutls_credentials_set(t->client, GNUTLS_CRD_ANON, t->ccred), 0);
    gnutls_transport_set_int(t->server, t->fds[0]);
    gnutls_transport_set_int(t->client, t->fds[1]);
    t->r = wh_tlsio_attach(t->server, t->fds[0]);
    /* both ends non-blocking: take turns until both are through */
    int cs = GNUTLS_E_AGAIN, ss = GNUTLS_E_AGAIN;
    for (int i = 0; i < 1000 && (cs != 0 || ss != 0); i++) {
        if (cs != 0) {
            cs = gnutls_handshake(t->client);
            assert_true(cs == 0 || cs == GNUTLS_E_AGAIN || cs == GNUTLS_E_INTERRUPTED);
        }
        if (ss != 0) {
            ss = gnutls_handshake(t->server);
            assert_true(ss == 0 || ss == GNUTLS_E_AGAIN || ss == GNUTLS_E_INTERRUPTED);
        }
    }
    assert_int_equal(cs, 0);
    assert_int_equal(ss, 0);
}

static void tls_pair_close(tls_pair *t)
{
    gnutls_deinit(t->server);
    gnutls_deinit(t->client);
    wh_tlsio_free(t->r);
    gnutls_anon_free_server_credentials(t->scred);
    gnutls_anon_free_client_credentials(t->ccred);
    close(t->fds[0]);
    if (t->fds[1] >= 0) {
        close(t->fds[1]);
    }
}

static void client_send(tls_pair *t, const char *data, size_t len)
{
    while (len) {
        ssize_t n = gnutls_record_send(t->client, data, len);
        assert_true(n > 0);
        data += n;
        len -= (size_t)n;
    }
}

static void test_wh_tlsio__one_read_serves_every_record_that_has_arrived(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 0);
    char a[3000], b[100], c[50];
    memset(a, 'a', sizeof(a));
    memset(b, 'b', sizeof(b));
    memset(c, 'c', sizeof(c));
    /* three records in the socket, as a pipelining client would leave them */
    client_send(&t, a, sizeof(a));
    client_send(&t, b, sizeof(b));
    client_send(&t, c, sizeof(c));

    unsigned long reads = wh_tlsio_reads(t.r);
    char buf[4096];
    assert_int_equal(gnutls_record_recv(t.server, buf, sizeof(buf)), sizeof(a));
    assert_memory_equal(buf, a, sizeof(a));
    /* GnuTLS alone reads a record's header and its body apart: two reads; here one read took
     * all three records, and the socket is empty */
    assert_int_equal(wh_tlsio_reads(t.r) - reads, 1);
    char peek;
    assert_int_equal(recv(t.fds[0], &peek, 1, MSG_PEEK | MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);

    /* the other two come from the buffer, without a would-block on the way */
    assert_int_equal(gnutls_record_recv(t.server, buf, sizeof(buf)), sizeof(b));
    assert_memory_equal(buf, b, sizeof(b));
    assert_int_equal(gnutls_record_recv(t.server, buf, sizeof(buf)), sizeof(c));
    assert_memory_equal(buf, c, sizeof(c));
    assert_int_equal(wh_tlsio_reads(t.r) - reads, 1);
    assert_int_equal(wh_tlsio_buffered(t.r), 0);

    /* drained: now it would block */
    assert_int_equal(gnutls_record_recv(t.server, buf, sizeof(buf)), GNUTLS_E_AGAIN);
    assert_int_equal(wh_tlsio_reads(t.r) - reads, 2);

    /* and answers still go out through the socket */
    assert_int_equal(gnutls_record_send(t.server, "ok", 2), 2);
    ssize_t n = GNUTLS_E_AGAIN;
    for (int i = 0; i < 100 && n == GNUTLS_E_AGAIN; i++) {
        n = gnutls_record_recv(t.client, buf, sizeof(buf));
    }
    assert_int_equal(n, 2);
    assert_memory_equal(buf, "ok", 2);
    tls_pair_close(&t);
}

static void test_wh_tlsio__records_larger_than_a_chunk_arrive_whole(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 0);
    size_t total = (size_t)100 * 1000;
    char *data = co_xmalloc(total);
    for (size_t i = 0; i < total; i++) {
        data[i] = (char)(i % 253);
    }
    char *got = co_xmalloc(total);
    size_t sent = 0, have = 0;
    /* the socket buffer is smaller than the message: send and receive in turns */
    for (int i = 0; i < 100000 && have < total; i++) {
        if (sent < total) {
            ssize_t n = gnutls_record_send(t.client, data + sent, total - sent);
            assert_true(n > 0 || n == GNUTLS_E_AGAIN);
            sent += n > 0 ? (size_t)n : 0;
        }
        ssize_t n = gnutls_record_recv(t.server, got + have, total - have);
        assert_true(n > 0 || n == GNUTLS_E_AGAIN);
        have += n > 0 ? (size_t)n : 0;
    }
    assert_int_equal(have, total);
    assert_memory_equal(got, data, total);
    free(got);
    free(data);
    tls_pair_close(&t);
}

/* Reads what the client has received until @p want bytes are in or nothing more comes. */
static size_t client_read(tls_pair *t, char *buf, size_t want)
{
    size_t have = 0;
    for (int idle = 0; have < want && idle < 100;) {
        ssize_t n = gnutls_record_recv(t->client, buf + have, want - have);
        if (n > 0) {
            have += (size_t)n;
            idle = 0;
        } else {
            assert_int_equal(n, GNUTLS_E_AGAIN);
            idle++;
        }
    }
    return have;
}

static void server_send(tls_pair *t, const char *data, size_t len)
{
    ssize_t n = gnutls_record_send(t->server, data, len);
    assert_int_equal(n, (ssize_t)len);
}

static void test_wh_tlsio__a_corked_response_goes_out_as_one_record_in_one_write(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 0);
    unsigned long writes = wh_tlsio_writes(t.r);
    /* nothing gathered: a flush writes nothing */
    assert_int_equal(wh_tlsio_flush(t.r), 0);
    assert_int_equal(wh_tlsio_writes(t.r) - writes, 0);

    wh_tlsio_cork(t.r, 0);
    server_send(&t, "HTTP/1.1 200 OK\r\n\r\n", 19);
    server_send(&t, "{\"ok\":true}", 11);
    /* gathered: nothing written, nothing for the client */
    assert_int_equal(wh_tlsio_writes(t.r) - writes, 0);
    char raw[512];
    assert_int_equal(recv(t.fds[1], raw, 1, MSG_PEEK | MSG_DONTWAIT), -1);
    assert_int_equal(wh_tlsio_flush(t.r), 0);
    assert_int_equal(wh_tlsio_writes(t.r) - writes, 1);
    /* on the wire: one application-data record and nothing after it */
    ssize_t n = recv(t.fds[1], raw, sizeof(raw), MSG_PEEK | MSG_DONTWAIT);
    assert_true(n >= 5);
    assert_int_equal((unsigned char)raw[0], 23);
    assert_int_equal((size_t)n, 5 + ((size_t)(unsigned char)raw[3] << 8 | (unsigned char)raw[4]));
    char buf[64];
    assert_int_equal(client_read(&t, buf, 30), 30);
    assert_memory_equal(buf, "HTTP/1.1 200 OK\r\n\r\n{\"ok\":true}", 30);

    /* the cork was for one response: what follows goes out at once */
    server_send(&t, "more", 4);
    assert_int_equal(wh_tlsio_writes(t.r) - writes, 2);
    assert_int_equal(client_read(&t, buf, 4), 4);
    assert_memory_equal(buf, "more", 4);
    tls_pair_close(&t);
}

/* Bytes in the send queue of @p fd not yet sent to the peer. */
static int unsent(int fd)
{
    int n = -1;
    assert_int_equal(ioctl(fd, SIOCOUTQNSD, &n), 0);
    return n;
}

/* Whether @p fd is corked (TCP_CORK). */
static int corked(int fd)
{
    int v = -1;
    socklen_t len = sizeof(v);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, &len), 0);
    return v;
}

/* A gathered response of @p text goes out with one flush; the client gets @p expect. */
static void respond(tls_pair *t, int socket_corked, const char *text, const char *expect)
{
    wh_tlsio_cork(t->r, socket_corked);
    server_send(t, text, strlen(text));
    assert_int_equal(wh_tlsio_flush(t->r), 0);
    assert_int_equal(unsent(t->fds[0]), 0);
    char buf[64];
    size_t want = strlen(expect);
    assert_int_equal(client_read(t, buf, want), want);
    assert_memory_equal(buf, expect, want);
}

static void test_wh_tlsio__a_flush_pushes_through_a_corked_socket(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 1);
    int on = 1;
    /* as the server sets every connection */
    assert_int_equal(setsockopt(t.fds[0], IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), 0);
    unsigned long pushes = wh_tlsio_pushes();
    /* the socket not known to be corked: each flush pushes */
    respond(&t, 0, "one", "one");
    respond(&t, 0, "two", "two");
    assert_int_equal(wh_tlsio_pushes() - pushes, 2);
    assert_int_equal(corked(t.fds[0]), 0);

    /* as libmicrohttpd corks a connection for a small response: a record written into the
     * corked socket stays there... */
    assert_int_equal(setsockopt(t.fds[0], IPPROTO_TCP, TCP_CORK, &on, sizeof(on)), 0);
    server_send(&t, "early", 5);
    assert_true(unsent(t.fds[0]) > 0);
    /* ...until the flush of a gathered response pushes it out with the response, taking the
     * cork off */
    respond(&t, 1, "response", "earlyresponse");
    assert_int_equal(wh_tlsio_pushes() - pushes, 3);
    assert_int_equal(corked(t.fds[0]), 0);

    /* for good: later responses go out with their write alone */
    unsigned long writes = wh_tlsio_writes(t.r);
    for (int i = 0; i < 3; i++) {
        respond(&t, i % 2, "later", "later");
    }
    assert_int_equal(wh_tlsio_pushes() - pushes, 3);
    assert_int_equal(wh_tlsio_writes(t.r) - writes, 3);
    tls_pair_close(&t);
}

static void test_wh_tlsio__a_full_socket_fails_the_flush_and_keeps_the_order(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 0);
    char chunk[8192];
    /* gathered responses until the socket takes no more: that flush fails, the rest is kept */
    size_t filled = 0;
    int rc = 0;
    for (int i = 0; i < 100000 && rc == 0; i++) {
        memset(chunk, 'a' + i % 26, sizeof(chunk));
        wh_tlsio_cork(t.r, 0);
        server_send(&t, chunk, sizeof(chunk));
        rc = wh_tlsio_flush(t.r);
        filled += sizeof(chunk);
    }
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EAGAIN);
    assert_true(filled > sizeof(chunk));

    /* a record after it waits behind the kept bytes and goes out when the client reads */
    size_t cap = filled + 4;
    char *buf = co_xmalloc(cap);
    size_t got = 0;
    ssize_t n = gnutls_record_send(t.server, "tail", 4);
    for (int i = 0; i < 100000 && n == GNUTLS_E_AGAIN; i++) {
        ssize_t r = gnutls_record_recv(t.client, buf + got, cap - got);
        got += r > 0 ? (size_t)r : 0;
        n = gnutls_record_send(t.server, NULL, 0);
    }
    assert_int_equal(n, 4);
    got += client_read(&t, buf + got, cap - got);
    assert_int_equal(got, cap);
    for (size_t i = 0; i < filled; i++) {
        char want = (char)('a' + (i / sizeof(chunk)) % 26);
        if (buf[i] != want) {
            fail_msg("byte %zu is '%c', expected '%c'", i, buf[i], want);
        }
    }
    assert_memory_equal(buf + filled, "tail", 4);
    free(buf);
    tls_pair_close(&t);
}

static void test_wh_tlsio__a_broken_connection_fails_the_flush(void **state)
{
    (void)state;
    tls_pair t;
    tls_pair_open(&t, 0);
    close(t.fds[1]);
    t.fds[1] = -1;
    wh_tlsio_cork(t.r, 0);
    server_send(&t, "lost", 4);
    assert_int_equal(wh_tlsio_flush(t.r), -1);
    assert_int_equal(errno, EPIPE);
    tls_pair_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wh_tlsio__hands_on_read_ahead_bytes_and_blocks_only_when_drained),
        cmocka_unit_test(test_wh_tlsio__large_reads_go_straight_to_the_caller),
        cmocka_unit_test(test_wh_tlsio__one_read_serves_every_record_that_has_arrived),
        cmocka_unit_test(test_wh_tlsio__records_larger_than_a_chunk_arrive_whole),
        cmocka_unit_test(test_wh_tlsio__a_corked_response_goes_out_as_one_record_in_one_write),
        cmocka_unit_test(test_wh_tlsio__a_flush_pushes_through_a_corked_socket),
        cmocka_unit_test(test_wh_tlsio__a_full_socket_fails_the_flush_and_keeps_the_order),
        cmocka_unit_test(test_wh_tlsio__a_broken_connection_fails_the_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
