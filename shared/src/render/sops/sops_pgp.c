/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenPGP keys for SOPS through gpgme, in a GnuPG home of our own: created with mkdtemp (mode
 * 0700) under $TMPDIR, used with loopback pinentry so that nothing ever prompts, and removed
 * when the key set is freed, after its gpg-agent has been stopped and the private key files
 * have been overwritten. Keys are never written anywhere else.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpgme.h>

#include "co/util/error.h"
#include "sops_int.h"

struct co_sops__pgp {
    char *home;
    gpgme_ctx_t ctx;
    size_t secret_keys;
};

static pthread_once_t gpgme_once = PTHREAD_ONCE_INIT;
static bool gpgme_ok;

static void gpgme_setup(void)
{
    gpgme_ok = gpgme_check_version(NULL) != NULL &&
               gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP) == 0;
}

static int gpg_fail(int code, const char *what, gpgme_error_t err)
{
    return co_error_set(code, "%s: %s", what, gpgme_strerror(err));
}

int co_sops__pgp_new(co_sops__pgp **out)
{
    co_sops__pgp *pgp = NULL;
    gpgme_error_t err;
    int error = CO_ERROR;

    pthread_once(&gpgme_once, gpgme_setup);
    if (!gpgme_ok) {
        return co_error_set(CO_EUNAVAILABLE, "GnuPG is not available (gpgme or gpg missing)");
    }
    pgp = co_xcalloc(1, sizeof(*pgp));
    /* Read once per key set; this is not the hot path of a daemon thread. */
    const char *tmp = getenv("TMPDIR"); // NOLINT(concurrency-mt-unsafe)
    pgp->home = co_xasprintf("%s/co-gnupg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(pgp->home)) {
        error = co_error_set_os(CO_ERROR, "cannot create a private GnuPG home");
        free(pgp->home);
        pgp->home = NULL;
        goto done;
    }
    if ((err = gpgme_new(&pgp->ctx)) != 0) {
        error = gpg_fail(CO_ERROR, "gpgme_new", err);
        goto done;
    }
    if ((err = gpgme_set_protocol(pgp->ctx, GPGME_PROTOCOL_OpenPGP)) != 0 ||
        (err = gpgme_ctx_set_engine_info(pgp->ctx, GPGME_PROTOCOL_OpenPGP, NULL, pgp->home)) != 0 ||
        (err = gpgme_set_pinentry_mode(pgp->ctx, GPGME_PINENTRY_MODE_LOOPBACK)) != 0) {
        error = gpg_fail(CO_ERROR, "configuring gpgme", err);
        goto done;
    }
    gpgme_set_offline(pgp->ctx, 1);
    gpgme_set_armor(pgp->ctx, 0);
    *out = pgp;
    pgp = NULL;
    error = 0;
done:
    co_sops__pgp_free(pgp);
    return error;
}

int co_sops__pgp_import(co_sops__pgp *pgp, const void *data, size_t len)
{
    gpgme_data_t d = NULL;
    gpgme_error_t err;
    int error;
    if ((err = gpgme_data_new_from_mem(&d, data, len, 0)) != 0) {
        return gpg_fail(CO_ERROR, "gpgme_data_new_from_mem", err);
    }
    err = gpgme_op_import(pgp->ctx, d);
    gpgme_import_result_t res = err ? NULL : gpgme_op_import_result(pgp->ctx);
    if (err || !res) {
        error = gpg_fail(CO_EINVALID, "importing OpenPGP keys", err);
        goto done;
    }
    if (res->considered == 0 || res->not_imported == res->considered) {
        error = co_error_set(CO_EINVALID, "no OpenPGP key could be imported");
        goto done;
    }
    pgp->secret_keys += (size_t)res->secret_imported + (size_t)res->secret_unchanged;
    error = 0;
done:
    gpgme_data_release(d);
    return error;
}

size_t co_sops__pgp_secret_count(const co_sops__pgp *pgp)
{
    return pgp ? pgp->secret_keys : 0;
}

int co_sops__pgp_decrypt(co_buf *out, co_sops__pgp *pgp, const char *msg, size_t len)
{
    gpgme_data_t cipher = NULL, plain = NULL;
    gpgme_error_t err;
    char *mem = NULL;
    size_t mem_len = 0;
    int error;
    if ((err = gpgme_data_new_from_mem(&cipher, msg, len, 0)) != 0 ||
        (err = gpgme_data_new(&plain)) != 0) {
        error = gpg_fail(CO_ERROR, "gpgme data", err);
        goto done;
    }
    err = gpgme_op_decrypt(pgp->ctx, cipher, plain);
    if (err) {
        gpgme_err_code_t code = gpgme_err_code(err);
        error = gpg_fail(code == GPG_ERR_NO_DATA ? CO_EINVALID : CO_EAUTH,
                         "decrypting the data key with GnuPG", err);
        goto done;
    }
    mem = gpgme_data_release_and_get_mem(plain, &mem_len);
    plain = NULL;
    if ((error = co_buf_put(out, mem, mem_len)) < 0) {
        co_error_set(error, "PGP-decrypted data key is too large");
    }
done:
    if (mem) {
        co_memzero(mem, mem_len);
        gpgme_free(mem);
    }
    gpgme_data_release(plain);
    gpgme_data_release(cipher);
    return error;
}

/* Overwrites and removes one entry of the GnuPG home (called depth-first by nftw). */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0) {
        int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            static const char zeros[4096];
            off_t left = st->st_size;
            while (left > 0) {
                ssize_t n =
                    write(fd, zeros, left > (off_t)sizeof(zeros) ? sizeof(zeros) : (size_t)left);
                if (n <= 0) {
                    break;
                }
                left -= n;
            }
            close(fd);
        }
    }
    /* best effort: keep walking so that as much of the private home as possible goes */
    if (type == FTW_DP) {
        (void)rmdir(path);
    } else {
        (void)unlink(path);
    }
    return 0;
}

/* Stops the agent GnuPG started for our home ("gpgconf --kill gpg-agent"), without a shell. */
static void kill_agent(const char *home)
{
    const char *gpgconf = gpgme_get_dirinfo("gpgconf-name");
    gpgme_ctx_t ctx = NULL;
    gpgme_data_t out = NULL, err_out = NULL;
    if (!gpgconf || gpgme_new(&ctx) != 0) {
        return;
    }
    const char *argv[] = {"gpgconf", "--homedir", home, "--kill", "all", NULL};
    if (gpgme_set_protocol(ctx, GPGME_PROTOCOL_SPAWN) == 0 && gpgme_data_new(&out) == 0 &&
        gpgme_data_new(&err_out) == 0) {
        (void)gpgme_op_spawn(ctx, gpgconf, argv, NULL, out, err_out, 0);
    }
    gpgme_data_release(out);
    gpgme_data_release(err_out);
    gpgme_release(ctx);
}

void co_sops__pgp_free(co_sops__pgp *pgp)
{
    if (!pgp) {
        return;
    }
    if (pgp->ctx) {
        gpgme_release(pgp->ctx);
    }
    if (pgp->home) {
        kill_agent(pgp->home);
        /* nftw keeps no state between calls we make; the home is private to this key set */
        // NOLINTNEXTLINE(concurrency-mt-unsafe)
        (void)nftw(pgp->home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(pgp->home);
    }
    free(pgp);
}
