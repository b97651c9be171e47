/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-memory archive construction with libarchive's writer, for the archive and source tests.
 */
#include "tests/support/test_archive_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <archive.h>
#include <archive_entry.h>

#include "co/util/common.h"
#include "tests/support/test_support.h"

typedef struct sink {
    char *data;
    size_t len, cap;
} sink;

static la_ssize_t sink_write(struct archive *a, void *ctx, const void *buf, size_t len)
{
    (void)a;
    sink *s = ctx;
    if (s->len + len > s->cap) {
        s->cap = (s->len + len) * 2;
        s->data = co_xrealloc(s->data, s->cap);
    }
    memcpy(s->data + s->len, buf, len);
    s->len += len;
    return (la_ssize_t)len;
}

static struct archive *writer(int format, sink *s)
{
    struct archive *a = archive_write_new();
    switch (format) {
    case TAB_TAR_GZ:
        archive_write_add_filter_gzip(a);
        archive_write_set_format_pax_restricted(a);
        break;
    case TAB_TAR:
        archive_write_set_format_pax_restricted(a);
        break;
    case TAB_TAR_BZ2:
        archive_write_add_filter_bzip2(a);
        archive_write_set_format_pax_restricted(a);
        break;
    case TAB_TAR_ZST:
        archive_write_add_filter_zstd(a);
        archive_write_set_format_pax_restricted(a);
        break;
    case TAB_TAR_XZ:
        archive_write_add_filter_xz(a);
        archive_write_set_format_pax_restricted(a);
        break;
    default:
        archive_write_set_format_zip(a);
        break;
    }
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open2(a, s, NULL, sink_write, NULL, NULL) != ARCHIVE_OK) {
        fail_msg("archive_write_open: %s", archive_error_string(a));
    }
    return a;
}

static void add(struct archive *a, const tab_entry *t)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, t->path);
    unsigned mode = t->mode;
    switch (t->kind) {
    case TAB_FILE:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, t->zeros ? (la_int64_t)t->zeros
                                           : (la_int64_t)(t->content ? strlen(t->content) : 0));
        mode = mode ? mode : 0644;
        break;
    case TAB_DIR:
        archive_entry_set_filetype(e, AE_IFDIR);
        mode = mode ? mode : 0755;
        break;
    case TAB_SYMLINK:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t->content);
        mode = mode ? mode : 0777;
        break;
    case TAB_HARDLINK:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t->content);
        mode = mode ? mode : 0644;
        break;
    case TAB_CHARDEV:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdev(e, makedev(1, 3));
        mode = mode ? mode : 0666;
        break;
    default:
        archive_entry_set_filetype(e, AE_IFIFO);
        mode = mode ? mode : 0644;
        break;
    }
    archive_entry_set_perm(e, mode);
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
        fail_msg("archive_write_header(%s): %s", t->path, archive_error_string(a));
    }
    if (t->kind == TAB_FILE && t->zeros) {
        static const char zero[65536];
        for (uint64_t left = t->zeros; left > 0;) {
            size_t n = left > sizeof(zero) ? sizeof(zero) : (size_t)left;
            archive_write_data(a, zero, n);
            left -= n;
        }
    } else if (t->kind == TAB_FILE && t->content) {
        archive_write_data(a, t->content, strlen(t->content));
    }
    archive_entry_free(e);
}

static void *finish(struct archive *a, sink *s, size_t *len_out)
{
    if (archive_write_close(a) != ARCHIVE_OK) {
        fail_msg("archive_write_close: %s", archive_error_string(a));
    }
    archive_write_free(a);
    *len_out = s->len;
    return s->data;
}

void *tab_build(int format, const tab_entry *entries, size_t n, size_t *len_out)
{
    sink s = {0};
    struct archive *a = writer(format, &s);
    for (size_t i = 0; i < n; i++) {
        add(a, &entries[i]);
    }
    return finish(a, &s, len_out);
}

void *tab_compress(int compression, const void *data, size_t len, uint64_t zeros, size_t *len_out)
{
    sink s = {0};
    struct archive *a = archive_write_new();
    switch (compression) {
    case TAB_GZIP:
        archive_write_add_filter_gzip(a);
        break;
    case TAB_BZIP2:
        archive_write_add_filter_bzip2(a);
        break;
    case TAB_ZSTD:
        archive_write_add_filter_zstd(a);
        break;
    default:
        archive_write_add_filter_xz(a);
        break;
    }
    archive_write_set_format_raw(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open2(a, &s, NULL, sink_write, NULL, NULL) != ARCHIVE_OK) {
        fail_msg("archive_write_open: %s", archive_error_string(a));
    }
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "data");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
        fail_msg("archive_write_header: %s", archive_error_string(a));
    }
    archive_entry_free(e);
    if (len && archive_write_data(a, data, len) < 0) {
        fail_msg("archive_write_data: %s", archive_error_string(a));
    }
    static const char zero[65536];
    for (uint64_t left = zeros; left > 0;) {
        size_t n = left > sizeof(zero) ? sizeof(zero) : (size_t)left;
        if (archive_write_data(a, zero, n) < 0) {
            fail_msg("archive_write_data: %s", archive_error_string(a));
        }
        left -= n;
    }
    return finish(a, &s, len_out);
}

/* One ustar header block for an empty regular file @p name (shorter than 100 bytes). */
static void ustar_empty_file(unsigned char block[512], const char *name)
{
    memset(block, 0, 512);
    snprintf((char *)block, 100, "%s", name);
    memcpy(block + 100, "0000644", 8);
    memcpy(block + 108, "0000000", 8);
    memcpy(block + 116, "0000000", 8);
    memcpy(block + 124, "00000000000", 12);
    memcpy(block + 136, "00000000000", 12);
    memset(block + 148, ' ', 8);
    block[156] = '0';
    memcpy(block + 257, "ustar", 6);
    block[263] = '0'; /* version "00", not terminated */
    block[264] = '0';
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++) {
        sum += block[i];
    }
    snprintf((char *)block + 148, 8, "%06o", sum);
}

/*
 * The tar stream is written by hand (a header block per file) and only compressed by libarchive
 * (its "raw" format with the gzip filter at level 1): a million entries take a few seconds
 * this way instead of minutes through the per-entry writer.
 */
void *tab_build_many(size_t count, size_t *len_out)
{
    sink s = {0};
    struct archive *a = archive_write_new();
    archive_write_add_filter_gzip(a);
    archive_write_set_filter_option(a, "gzip", "compression-level", "1");
    archive_write_set_format_raw(a);
    if (archive_write_open2(a, &s, NULL, sink_write, NULL, NULL) != ARCHIVE_OK) {
        fail_msg("archive_write_open: %s", archive_error_string(a));
    }
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "stream.tar");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
        fail_msg("archive_write_header: %s", archive_error_string(a));
    }
    archive_entry_free(e);
    enum { PER_CHUNK = 256 };
    unsigned char *chunk = co_xmalloc((size_t)PER_CHUNK * 512);
    char name[64];
    for (size_t i = 0; i < count;) {
        size_t n = 0;
        for (; n < PER_CHUNK && i < count; n++, i++) {
            snprintf(name, sizeof(name), "f/%zu", i);
            ustar_empty_file(chunk + (n * 512), name);
        }
        if (archive_write_data(a, chunk, n * 512) < 0) {
            fail_msg("archive_write_data: %s", archive_error_string(a));
        }
    }
    memset(chunk, 0, 1024); /* the end-of-archive marker: two zero blocks */
    if (archive_write_data(a, chunk, 1024) < 0) {
        fail_msg("archive_write_data: %s", archive_error_string(a));
    }
    free(chunk);
    return finish(a, &s, len_out);
}
