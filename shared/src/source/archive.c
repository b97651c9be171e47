/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading archives with libarchive and feeding their entries to the confined tree writer
 * (archive_writer.c), which owns every safety rule. Only tar (optionally compressed), zip and
 * libarchive's raw format (a single compressed or plain YAML file) are enabled, to keep
 * libarchive's attack surface to the formats artifacts actually use; a format chosen by the
 * download's Content-Type or URL enables only its own reader.
 */
#include "co/source/archive.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include "archive_lib.h"
#include "co/util/error.h"

#define READ_BLOCK 65536

static const char *format_name(co_archive_format f)
{
    switch (f) {
    case CO_ARCHIVE_TAR_GZ:
        return "gzip-compressed tar";
    case CO_ARCHIVE_TAR:
        return "tar";
    case CO_ARCHIVE_ZIP:
        return "zip";
    case CO_ARCHIVE_TAR_BZ2:
        return "bzip2-compressed tar";
    case CO_ARCHIVE_TAR_ZST:
        return "zstd-compressed tar";
    case CO_ARCHIVE_TAR_XZ:
        return "xz-compressed tar";
    case CO_ARCHIVE_YAML:
        return "YAML file";
    case CO_ARCHIVE_TAR_ANY:
        return "tar";
    default:
        return "tar or zip";
    }
}

const char *co_archive_format_name(co_archive_format format)
{
    switch (format) {
    case CO_ARCHIVE_TAR_GZ:
        return "tar.gz";
    case CO_ARCHIVE_TAR:
        return "tar";
    case CO_ARCHIVE_ZIP:
        return "zip";
    case CO_ARCHIVE_TAR_BZ2:
        return "tar.bz2";
    case CO_ARCHIVE_TAR_ZST:
        return "tar.zst";
    case CO_ARCHIVE_TAR_XZ:
        return "tar.xz";
    case CO_ARCHIVE_YAML:
        return "yaml";
    case CO_ARCHIVE_TAR_ANY:
        return "tar";
    default:
        return "tar or zip";
    }
}

/* ---- choosing the format ----------------------------------------------------------------- */

static int has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && strncasecmp(s + len - n, suffix, n) == 0;
}

/* Whether the path ends in .yaml or .yml, optionally followed by a compression suffix. */
static int is_yaml_path(const char *path, size_t len)
{
    static const char *const compressions[] = {"", ".gz", ".bz2", ".xz", ".zst"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(compressions); i++) {
        size_t n = strlen(compressions[i]);
        if (has_suffix(path, len, compressions[i]) &&
            (has_suffix(path, len - n, ".yaml") || has_suffix(path, len - n, ".yml"))) {
            return 1;
        }
    }
    return 0;
}

/* The path of @p url: after the authority, before the query or fragment (a bare path as is). */
static void url_path(const char *url, const char **path, size_t *len)
{
    const char *p = url ? url : "";
    const char *scheme = strstr(p, "://");
    if (scheme) {
        p = scheme + 3;
        p += strcspn(p, "/?#");
    }
    *path = p;
    *len = strcspn(p, "?#");
}

co_archive_format co_archive_format_for(const char *content_type, const char *url)
{
    static const struct {
        const char *type;
        co_archive_format format;
        int yaml_by_suffix; /* a bare compression: YAML when the path says so */
    } types[] = {
        {"application/gzip", CO_ARCHIVE_TAR_GZ, 1},
        {"application/x-gzip", CO_ARCHIVE_TAR_GZ, 1},
        {"application/bzip2", CO_ARCHIVE_TAR_BZ2, 1},
        {"application/x-bzip2", CO_ARCHIVE_TAR_BZ2, 1},
        {"application/zstd", CO_ARCHIVE_TAR_ZST, 1},
        {"application/x-zstd", CO_ARCHIVE_TAR_ZST, 1},
        {"application/x-xz", CO_ARCHIVE_TAR_XZ, 1},
        {"application/tar", CO_ARCHIVE_TAR, 0},
        {"application/x-tar", CO_ARCHIVE_TAR, 0},
        {"application/tar+gzip", CO_ARCHIVE_TAR_GZ, 0},
        {"application/x-tar+gzip", CO_ARCHIVE_TAR_GZ, 0},
        {"application/tar+bzip2", CO_ARCHIVE_TAR_BZ2, 0},
        {"application/x-tar+bzip2", CO_ARCHIVE_TAR_BZ2, 0},
        {"application/tar+zstd", CO_ARCHIVE_TAR_ZST, 0},
        {"application/x-tar+zstd", CO_ARCHIVE_TAR_ZST, 0},
        {"application/zip", CO_ARCHIVE_ZIP, 0},
        {"application/x-zip", CO_ARCHIVE_ZIP, 0},
        {"application/x-zip-compressed", CO_ARCHIVE_ZIP, 0},
    };
    static const char *const yaml_types[] = {"application/yaml", "application/x-yaml", "text/yaml",
                                             "text/x-yaml"};
    static const char *const yaml_compressions[] = {"", "+gzip", "+bzip2"};
    const char *path;
    size_t plen;
    url_path(url, &path, &plen);
    if (content_type) {
        /* the media type without parameters and surrounding blanks */
        while (*content_type == ' ' || *content_type == '\t') {
            content_type++;
        }
        size_t n = strcspn(content_type, ";");
        while (n && (content_type[n - 1] == ' ' || content_type[n - 1] == '\t')) {
            n--;
        }
        for (size_t i = 0; i < CO_ARRAY_SIZE(types); i++) {
            if (strlen(types[i].type) == n && strncasecmp(content_type, types[i].type, n) == 0) {
                return types[i].yaml_by_suffix && is_yaml_path(path, plen) ? CO_ARCHIVE_YAML
                                                                           : types[i].format;
            }
        }
        for (size_t i = 0; i < CO_ARRAY_SIZE(yaml_types); i++) {
            for (size_t j = 0; j < CO_ARRAY_SIZE(yaml_compressions); j++) {
                size_t tn = strlen(yaml_types[i]), cn = strlen(yaml_compressions[j]);
                if (tn + cn == n && strncasecmp(content_type, yaml_types[i], tn) == 0 &&
                    strncasecmp(content_type + tn, yaml_compressions[j], cn) == 0) {
                    return CO_ARCHIVE_YAML;
                }
            }
        }
    }
    static const struct {
        const char *suffix;
        co_archive_format format;
    } suffixes[] = {
        {".tar.gz", CO_ARCHIVE_TAR_GZ},   {".tgz", CO_ARCHIVE_TAR_GZ},
        {".tar.bz2", CO_ARCHIVE_TAR_BZ2}, {".tbz2", CO_ARCHIVE_TAR_BZ2},
        {".tbz", CO_ARCHIVE_TAR_BZ2},     {".tar.zst", CO_ARCHIVE_TAR_ZST},
        {".tzst", CO_ARCHIVE_TAR_ZST},    {".tar.xz", CO_ARCHIVE_TAR_XZ},
        {".txz", CO_ARCHIVE_TAR_XZ},      {".tar", CO_ARCHIVE_TAR},
        {".zip", CO_ARCHIVE_ZIP},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(suffixes); i++) {
        if (has_suffix(path, plen, suffixes[i].suffix)) {
            return suffixes[i].format;
        }
    }
    return is_yaml_path(path, plen) ? CO_ARCHIVE_YAML : CO_ARCHIVE_AUTO;
}

/* ---- reading ----------------------------------------------------------------------------- */

static struct archive *reader_new(co_archive_format format)
{
    struct archive *a = archive_read_new();
    CO_ASSERT(a);
    switch (format) {
    case CO_ARCHIVE_TAR_GZ:
        archive_read_support_filter_gzip(a);
        archive_read_support_format_tar(a);
        break;
    case CO_ARCHIVE_TAR:
        archive_read_support_format_tar(a);
        break;
    case CO_ARCHIVE_ZIP:
        archive_read_support_format_zip(a);
        break;
    case CO_ARCHIVE_TAR_BZ2:
        archive_read_support_filter_bzip2(a);
        archive_read_support_format_tar(a);
        break;
    case CO_ARCHIVE_TAR_ZST:
        archive_read_support_filter_zstd(a);
        archive_read_support_format_tar(a);
        break;
    case CO_ARCHIVE_TAR_XZ:
        archive_read_support_filter_xz(a);
        archive_read_support_format_tar(a);
        break;
    case CO_ARCHIVE_YAML:
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_bzip2(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_format_raw(a);
        break;
    case CO_ARCHIVE_TAR_ANY:
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_bzip2(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_format_tar(a);
        break;
    default:
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_bzip2(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_format_tar(a);
        archive_read_support_format_zip(a);
        break;
    }
    return a;
}

static const char *archive_text(struct archive *a)
{
    const char *s = archive_error_string(a);
    return s ? s : "unknown error";
}

/* Checks, after the first header, that the input had the format the caller demanded. */
static int check_format(struct archive *a, co_archive_format format)
{
    int filter = archive_filter_code(a, 0);
    int fmt = archive_format(a) & ARCHIVE_FORMAT_BASE_MASK;
    switch (format) {
    case CO_ARCHIVE_TAR_GZ:
        if (filter != ARCHIVE_FILTER_GZIP || fmt != ARCHIVE_FORMAT_TAR) {
            return co_error_set(CO_EINVALID, "not a gzip-compressed tar archive");
        }
        break;
    case CO_ARCHIVE_TAR:
        if (filter != ARCHIVE_FILTER_NONE || fmt != ARCHIVE_FORMAT_TAR) {
            return co_error_set(CO_EINVALID, "not an uncompressed tar archive");
        }
        break;
    case CO_ARCHIVE_ZIP:
        if (fmt != ARCHIVE_FORMAT_ZIP) {
            return co_error_set(CO_EINVALID, "not a zip archive");
        }
        break;
    case CO_ARCHIVE_TAR_BZ2:
    case CO_ARCHIVE_TAR_ZST:
    case CO_ARCHIVE_TAR_XZ: {
        int want = format == CO_ARCHIVE_TAR_BZ2   ? ARCHIVE_FILTER_BZIP2
                   : format == CO_ARCHIVE_TAR_ZST ? ARCHIVE_FILTER_ZSTD
                                                  : ARCHIVE_FILTER_XZ;
        if (filter != want || fmt != ARCHIVE_FORMAT_TAR) {
            return co_error_set(CO_EINVALID, "not a %s archive", format_name(format));
        }
        break;
    }
    case CO_ARCHIVE_YAML:
        /* one compression at most: a file compressed over and over is a bomb, not a source */
        if (fmt != ARCHIVE_FORMAT_RAW || archive_filter_count(a) > 2) {
            return co_error_set(CO_EINVALID, "not a YAML file or a compressed one");
        }
        break;
    case CO_ARCHIVE_TAR_ANY:
        if (fmt != ARCHIVE_FORMAT_TAR) {
            return co_error_set(CO_EINVALID, "not a tar archive");
        }
        break;
    default:
        if (fmt != ARCHIVE_FORMAT_TAR && fmt != ARCHIVE_FORMAT_ZIP) {
            return co_error_set(CO_EINVALID, "not a tar or zip archive");
        }
        break;
    }
    return 0;
}

static int copy_data(struct archive *a, co_archive__writer *w, const char *name)
{
    char buf[READ_BLOCK];
    for (;;) {
        la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            char pb[256];
            return co_error_set(CO_EINVALID, "entry %s: %s",
                                co_archive__printable(name, pb, sizeof(pb)), archive_text(a));
        }
        int rc = co_archive__write(w, buf, (size_t)n);
        if (rc < 0) {
            return rc;
        }
    }
}

static int extract_entry(struct archive *a, struct archive_entry *e, co_archive__writer *w)
{
    char pb[256];
    const char *name = archive_entry_pathname(e);
    if (!name) {
        name = archive_entry_pathname_utf8(e);
    }
    if (!name || !name[0]) {
        return co_error_set(CO_EINVALID, "entry %llu has no usable name",
                            (unsigned long long)co_archive__stats(w)->entries + 1);
    }
    const char *hardlink = archive_entry_hardlink(e);
    if (hardlink) {
        return co_archive__hardlink(w, name, hardlink);
    }
    mode_t type = archive_entry_filetype(e);
    switch (type) {
    case AE_IFDIR:
        return co_archive__mkdir(w, name);
    case AE_IFLNK: {
        const char *target = archive_entry_symlink(e);
        if (!target) {
            target = archive_entry_symlink_utf8(e);
        }
        if (!target) {
            return co_error_set(CO_EINVALID, "entry %s: symlink without a usable target",
                                co_archive__printable(name, pb, sizeof(pb)));
        }
        return co_archive__symlink(w, name, target);
    }
    case AE_IFREG: {
        int rc = co_archive__file_begin(w, name, (archive_entry_perm(e) & 0111) != 0);
        if (rc < 0) {
            return rc;
        }
        rc = copy_data(a, w, name);
        int rc2 = co_archive__file_end(w);
        return rc < 0 ? rc : rc2;
    }
    case AE_IFCHR:
    case AE_IFBLK:
        return co_error_set(CO_EINVALID, "entry %s: device files are not allowed",
                            co_archive__printable(name, pb, sizeof(pb)));
    case AE_IFIFO:
        return co_error_set(CO_EINVALID, "entry %s: fifos are not allowed",
                            co_archive__printable(name, pb, sizeof(pb)));
    case AE_IFSOCK:
        return co_error_set(CO_EINVALID, "entry %s: sockets are not allowed",
                            co_archive__printable(name, pb, sizeof(pb)));
    default:
        return co_error_set(CO_EINVALID, "entry %s: unsupported entry type 0%o",
                            co_archive__printable(name, pb, sizeof(pb)), (unsigned)type);
    }
}

static int extract_yaml(struct archive *a, co_archive__writer *w)
{
    int rc = co_archive__file_begin(w, CO_ARCHIVE_YAML_NAME, 0);
    if (rc < 0) {
        return rc;
    }
    rc = copy_data(a, w, CO_ARCHIVE_YAML_NAME);
    int rc2 = co_archive__file_end(w);
    return rc < 0 ? rc : rc2;
}

/* Reads every entry of the opened archive @p a into @p w. */
static int extract_all(struct archive *a, co_archive_format format, co_archive__writer *w)
{
    struct archive_entry *e;
    int first = 1;
    for (;;) {
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF) {
            if (first) {
                /* an empty tar is valid, but say what the input was not, for garbage input */
                if (archive_format(a) == 0) {
                    return co_error_set(CO_EINVALID, "not a %s archive", format_name(format));
                }
            }
            return 0;
        }
        if (r < ARCHIVE_WARN) {
            if (first) {
                return co_error_set(CO_EINVALID, "not a valid %s archive: %s", format_name(format),
                                    archive_text(a));
            }
            return co_error_set(CO_EINVALID, "corrupt archive after %llu entries: %s",
                                (unsigned long long)co_archive__stats(w)->entries, archive_text(a));
        }
        if (first) {
            int rc = check_format(a, format);
            if (rc < 0) {
                return rc;
            }
            first = 0;
        }
        int rc = co_archive__count_entry(w);
        if (rc < 0) {
            return rc;
        }
        if (format == CO_ARCHIVE_YAML) {
            /* the raw reader yields the whole (decompressed) input as its only entry */
            return extract_yaml(a, w);
        }
        if ((rc = extract_entry(a, e, w)) < 0) {
            return rc;
        }
    }
}

/* @p open_rc is the result of archive_read_open_*() on @p a. Frees @p a. */
static int extract(struct archive *a,
                   int open_rc,
                   co_archive_format format,
                   const char *dest,
                   const co_archive_limits *limits,
                   unsigned flags,
                   co_archive_stats *stats)
{
    co_archive__writer *w = NULL;
    int rc;
    if (open_rc != ARCHIVE_OK) {
        rc = co_error_set(CO_EINVALID, "not a valid %s archive: %s", format_name(format),
                          archive_text(a));
        goto done;
    }
    if ((rc = co_archive__writer_new(&w, dest, limits, flags & CO_ARCHIVE_SYNC)) < 0) {
        goto done;
    }
    if ((rc = extract_all(a, format, w)) < 0) {
        goto done;
    }
    if ((rc = co_archive__commit(w, NULL)) < 0) {
        goto done;
    }
    if (stats) {
        *stats = *co_archive__stats(w);
    }
done:
    co_archive__writer_free(w);
    archive_read_free(a);
    return rc;
}

/* An empty download is an empty YAML file, which libarchive's raw reader refuses to read. */
static int extract_empty_yaml(const char *dest,
                              const co_archive_limits *limits,
                              unsigned flags,
                              co_archive_stats *stats)
{
    co_archive__writer *w = NULL;
    int rc = co_archive__writer_new(&w, dest, limits, flags & CO_ARCHIVE_SYNC);
    if (rc == 0) {
        rc = co_archive__count_entry(w);
    }
    if (rc == 0) {
        rc = co_archive__file_begin(w, CO_ARCHIVE_YAML_NAME, 0);
    }
    if (rc == 0) {
        rc = co_archive__file_end(w);
    }
    if (rc == 0) {
        rc = co_archive__commit(w, NULL);
    }
    if (rc == 0 && stats) {
        *stats = *co_archive__stats(w);
    }
    co_archive__writer_free(w);
    return rc;
}

int co_archive_extract_mem(const void *data,
                           size_t len,
                           co_archive_format format,
                           const char *dest,
                           const co_archive_limits *limits,
                           unsigned flags,
                           co_archive_stats *stats)
{
    if (format == CO_ARCHIVE_YAML && len == 0) {
        return extract_empty_yaml(dest, limits, flags, stats);
    }
    struct archive *a = reader_new(format);
    /* libarchive takes a non-const pointer but only reads through it */
    int open_rc = archive_read_open_memory(a, (void *)(uintptr_t)data, len);
    return extract(a, open_rc, format, dest, limits, flags, stats);
}

int co_archive_extract_file(const char *path,
                            co_archive_format format,
                            const char *dest,
                            const co_archive_limits *limits,
                            unsigned flags,
                            co_archive_stats *stats)
{
    struct stat st;
    if (format == CO_ARCHIVE_YAML && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_size == 0) {
        return extract_empty_yaml(dest, limits, flags, stats);
    }
    struct archive *a = reader_new(format);
    int open_rc = archive_read_open_filename(a, path, READ_BLOCK);
    if (open_rc != ARCHIVE_OK && errno == ENOENT) {
        archive_read_free(a);
        return co_error_set(CO_ENOTFOUND, "archive %s does not exist", path);
    }
    return extract(a, open_rc, format, dest, limits, flags, stats);
}
