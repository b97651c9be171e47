/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `certs` command line. Files are written with mode 0600 (keys) or 0644 (certificates),
 * through a randomly named, exclusively created temporary file and a rename, so a reader never
 * sees half a file and nothing planted in the output directory is written through.
 */
#include "certs/certs_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "certs/certs.h"
#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/flags.h"

static int usage(void)
{
    fprintf(stderr, "usage:\n"
                    "  component-webhook certs create-ca --out-dir DIR [--ca-name CN] "
                    "[--validity 8760h] [--key-type ecdsa-p256|ecdsa-p384|rsa-2048]\n"
                    "  component-webhook certs create-serving --ca-dir DIR --out-dir DIR "
                    "[--service NAME] [--namespace NS] [--extra-name NAME]... [--validity 2160h]\n"
                    "  component-webhook certs inspect FILE...\n"
                    "  component-webhook certs verify --ca FILE --cert FILE [--name NAME]\n");
    return 2;
}

static int fail(void)
{
    fprintf(stderr, "component-webhook certs: %s\n", co_error_last());
    return 1;
}

static int read_file(char **out, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return co_error_set_os(errno == ENOENT ? CO_ENOTFOUND : CO_ERROR, "cannot open %s", path);
    }
    co_buf b = CO_BUF_INIT(CO_MAX_PEM_FILE);
    char chunk[4096];
    ssize_t n;
    int rc = 0;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
        if ((rc = co_buf_put(&b, chunk, (size_t)n)) < 0) {
            co_error_wrap("%s", path);
            break;
        }
    }
    if (n < 0) {
        rc = co_error_set_os(CO_ERROR, "cannot read %s", path);
    }
    close(fd);
    if (rc < 0) {
        co_buf_dispose(&b);
        return rc;
    }
    *out = co_buf_take(&b, NULL);
    return 0;
}

/*
 * Writes @p text to @p dir/@p name through a fresh temporary file of the same directory. The
 * temporary name is random and created exclusively (mkostemp: O_CREAT|O_EXCL, which refuses an
 * existing name, symlinks included), so nobody who can write to @p dir can plant a link there
 * for us to write a private key through, nor hand us a file they already hold open. The mode is
 * set before the first byte is written.
 */
static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char *path = co_xasprintf("%s/%s", dir, name);
    char *tmp = co_xasprintf("%s/.%s.XXXXXX", dir, name);
    int rc = 0;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = co_error_set_os(CO_ERROR, "cannot create a temporary file in %s", dir);
        free(tmp); /* not ours: nothing to remove */
        tmp = NULL;
        goto done;
    }
    if (fchmod(fd, mode) != 0) {
        rc = co_error_set_os(CO_ERROR, "cannot set the mode of %s", tmp);
        goto done;
    }
    size_t len = strlen(text);
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            rc = co_error_set_os(CO_ERROR, "cannot write %s", tmp);
            goto done;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = co_error_set_os(CO_ERROR, "cannot write %s", tmp);
        goto done;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        rc = co_error_set_os(CO_ERROR, "cannot write %s", tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        rc = co_error_set_os(CO_ERROR, "cannot rename %s to %s", tmp, path);
        goto done;
    }
    free(tmp);
    tmp = NULL;
done:
    if (fd >= 0) {
        close(fd);
    }
    if (tmp) {
        unlink(tmp);
    }
    free(tmp);
    free(path);
    return rc;
}

static int parse_validity(long long *out, const char *text)
{
    int64_t ns = 0;
    if (co_duration_parse(&ns, text) < 0 || ns < 1000000000LL) {
        co_error_clear();
        return co_error_set(CO_EINVALID, "--validity: \"%s\" is not a duration of at least 1s",
                            text);
    }
    *out = ns / 1000000000LL;
    return 0;
}

static int create_ca(int argc, char **argv)
{
    const char *out_dir = NULL, *cn = "component-webhook-ca", *validity = "8760h";
    const char *key_type = "ecdsa-p256";
    const co_flag flags[] = {
        {"out-dir", CO_FLAG_STRING, &out_dir, "DIR", "where ca.crt and ca.key go (required)"},
        {"ca-name", CO_FLAG_STRING, &cn, "CN", "the CA's common name"},
        {"validity", CO_FLAG_STRING, &validity, "DURATION", "lifetime (default 8760h)"},
        {"key-type", CO_FLAG_STRING, &key_type, "TYPE", "ecdsa-p256, ecdsa-p384 or rsa-2048"},
    };
    int next = 0;
    if (co_flags_parse(&next, flags, CO_ARRAY_SIZE(flags), argc, argv) < 0 || !out_dir ||
        next != argc) {
        if (!out_dir) {
            fprintf(stderr, "component-webhook certs create-ca: --out-dir is required\n");
        }
        return usage();
    }
    co_certs_request req = {.common_name = cn, .now = time(NULL), .backdate_s = 3600};
    co_certs_pair ca = {0};
    if (parse_validity(&req.validity_s, validity) < 0 ||
        co_certs_key_type_parse(&req.key_type, key_type) < 0 || co_certs_create_ca(&ca, &req) < 0 ||
        write_file(out_dir, "ca.key", ca.key_pem, 0600) < 0 ||
        write_file(out_dir, "ca.crt", ca.cert_pem, 0644) < 0) {
        co_certs_pair_dispose(&ca);
        return fail();
    }
    co_certs_pair_dispose(&ca);
    printf("wrote %s/ca.crt and %s/ca.key\n", out_dir, out_dir);
    return 0;
}

static int create_serving(int argc, char **argv)
{
    const char *ca_dir = NULL, *out_dir = NULL, *svc = "component-webhook";
    const char *ns = "component-operator", *validity = "2160h", *key_type = "ecdsa-p256";
    co_flag_list extra = {0};
    const co_flag flags[] = {
        {"ca-dir", CO_FLAG_STRING, &ca_dir, "DIR", "holds ca.crt and ca.key (required)"},
        {"out-dir", CO_FLAG_STRING, &out_dir, "DIR", "where tls.crt and tls.key go (required)"},
        {"service", CO_FLAG_STRING, &svc, "NAME", "the webhook's Service"},
        {"namespace", CO_FLAG_STRING, &ns, "NS", "the Service's namespace"},
        {"extra-name", CO_FLAG_LIST, &extra, "NAME", "another DNS name or IP (repeatable)"},
        {"validity", CO_FLAG_STRING, &validity, "DURATION", "lifetime (default 2160h)"},
        {"key-type", CO_FLAG_STRING, &key_type, "TYPE", "ecdsa-p256, ecdsa-p384 or rsa-2048"},
    };
    int next = 0;
    if (co_flags_parse(&next, flags, CO_ARRAY_SIZE(flags), argc, argv) < 0 || !ca_dir || !out_dir ||
        next != argc) {
        co_flag_list_dispose(&extra);
        return usage();
    }
    char *names[4];
    names[0] = co_xasprintf("%s", svc);
    names[1] = co_xasprintf("%s.%s", svc, ns);
    names[2] = co_xasprintf("%s.%s.svc", svc, ns);
    names[3] = co_xasprintf("%s.%s.svc.cluster.local", svc, ns);
    const char **dns = co_xcalloc(4 + extra.len, sizeof(char *));
    const char **ips = co_xcalloc(extra.len + 1, sizeof(char *));
    size_t ndns = 0, nips = 0;
    for (size_t i = 0; i < 4; i++) {
        dns[ndns++] = names[i];
    }
    for (size_t i = 0; i < extra.len; i++) {
        unsigned char a[16];
        if (inet_pton(AF_INET, extra.items[i], a) == 1 ||
            inet_pton(AF_INET6, extra.items[i], a) == 1) {
            ips[nips++] = extra.items[i];
        } else {
            dns[ndns++] = extra.items[i];
        }
    }
    char ca_crt[4096], ca_key[4096];
    snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", ca_dir);
    snprintf(ca_key, sizeof(ca_key), "%s/ca.key", ca_dir);
    co_certs_pair ca = {0}, leaf = {0};
    co_certs_request req = {.common_name = svc,
                            .dns_names = dns,
                            .ndns = ndns,
                            .ip_addrs = ips,
                            .nips = nips,
                            .now = time(NULL),
                            .backdate_s = 3600};
    int status = 0;
    if (parse_validity(&req.validity_s, validity) < 0 ||
        co_certs_key_type_parse(&req.key_type, key_type) < 0 ||
        read_file(&ca.cert_pem, ca_crt) < 0 || read_file(&ca.key_pem, ca_key) < 0 ||
        co_certs_create_serving(&leaf, &ca, &req) < 0 ||
        write_file(out_dir, "tls.key", leaf.key_pem, 0600) < 0 ||
        write_file(out_dir, "tls.crt", leaf.cert_pem, 0644) < 0) {
        status = fail();
    } else {
        printf("wrote %s/tls.crt and %s/tls.key\n", out_dir, out_dir);
    }
    co_certs_pair_dispose(&leaf);
    co_certs_pair_dispose(&ca);
    for (size_t i = 0; i < 4; i++) {
        free(names[i]);
    }
    free(dns);
    free(ips);
    co_flag_list_dispose(&extra);
    return status;
}

static void print_time(const char *label, time_t t)
{
    struct tm tm;
    char buf[64];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    printf("  %-11s %s\n", label, buf);
}

static int inspect(int argc, char **argv)
{
    if (argc < 2) {
        return usage();
    }
    int status = 0;
    for (int a = 1; a < argc; a++) {
        char *pem = NULL;
        if (read_file(&pem, argv[a]) < 0) {
            status = fail();
            continue;
        }
        if (!pem) {
            continue; /* cannot happen: read_file() sets it on success */
        }
        int n = co_certs_count(pem, strlen(pem));
        if (n < 0) {
            fprintf(stderr, "component-webhook certs: %s: %s\n", argv[a], co_error_last());
            status = 1;
            free(pem);
            continue;
        }
        /* Walk the certificates: each inspect reads the first, so advance past END lines. */
        const char *p = pem;
        for (int i = 0; i < n; i++) {
            co_certs_info info;
            if (co_certs_inspect(&info, p, strlen(p)) < 0) {
                status = fail();
                break;
            }
            printf("%s [%d/%d]\n", argv[a], i + 1, n);
            printf("  %-11s %s\n", "subject", info.subject);
            printf("  %-11s %s\n", "issuer", info.issuer);
            printf("  %-11s %s\n", "serial", info.serial);
            print_time("notBefore", info.not_before);
            print_time("notAfter", info.not_after);
            printf("  %-11s %s\n", "CA", info.is_ca ? "yes" : "no");
            printf("  %-11s %s\n", "serverAuth", info.server_auth ? "yes" : "no");
            printf("  %-11s %s\n", "SANs", info.sans[0] ? info.sans : "(none)");
            printf("  %-11s %s\n", "sha256", info.sha256);
            const char *end = strstr(p, "-----END CERTIFICATE-----");
            if (!end) {
                break;
            }
            p = end + strlen("-----END CERTIFICATE-----");
        }
        free(pem);
    }
    return status;
}

static int verify(int argc, char **argv)
{
    const char *ca = NULL, *cert = NULL, *name = NULL;
    const co_flag flags[] = {
        {"ca", CO_FLAG_STRING, &ca, "FILE", "CA bundle (required)"},
        {"cert", CO_FLAG_STRING, &cert, "FILE", "certificate to verify (required)"},
        {"name", CO_FLAG_STRING, &name, "NAME", "DNS name or IP it must be valid for"},
    };
    int next = 0;
    if (co_flags_parse(&next, flags, CO_ARRAY_SIZE(flags), argc, argv) < 0 || !ca || !cert ||
        next != argc) {
        return usage();
    }
    char *ca_pem = NULL, *cert_pem = NULL;
    int status = 0;
    if (read_file(&ca_pem, ca) < 0 || read_file(&cert_pem, cert) < 0 ||
        co_certs_verify(cert_pem, ca_pem, name, time(NULL)) < 0) {
        status = fail();
    } else {
        printf("%s: OK\n", cert);
    }
    free(ca_pem);
    free(cert_pem);
    return status;
}

int co_certs_cli(int argc, char **argv)
{
    if (argc < 2) {
        return usage();
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "create-ca")) {
        return create_ca(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "create-serving")) {
        return create_serving(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "inspect")) {
        return inspect(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "verify")) {
        return verify(argc - 1, argv + 1);
    }
    fprintf(stderr, "component-webhook certs: unknown command \"%s\"\n", cmd);
    return usage();
}
