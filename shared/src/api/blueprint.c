/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blueprint and BlueprintVersion (docs/blueprints.md): their schemas (shared with the CRD
 * generator), validation with field errors, the Go-compatible digest of a Blueprint's spec, the
 * names and labels derived from it, and parsing into C structs.
 */
#include "co/api/blueprint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "schema_lib.h"

/* ---------------------------------------------------------------------------------------------
 * Schemas
 * ------------------------------------------------------------------------------------------- */

#define FIELDS(...) ((const co_schema[]){__VA_ARGS__, {NULL}})

#define FILES_FIELD                                                                                \
    {                                                                                              \
        .name = "files", .type = CO_SCHEMA_STRING_MAP,                                             \
        .description = "The source tree: relative file path to file content."                      \
    }

#define ROOT_FIELDS(kind, spec_description, spec_fields)                                           \
    FIELDS({.name = "apiVersion",                                                                  \
            .type = CO_SCHEMA_STRING,                                                              \
            .description = "Version of the schema the object is written in."},                     \
           {.name = "kind",                                                                        \
            .type = CO_SCHEMA_STRING,                                                              \
            .description = "Kind of the object: " kind "."},                                       \
           {.name = "metadata", .type = CO_SCHEMA_METADATA},                                       \
           {.name = "spec",                                                                        \
            .type = CO_SCHEMA_OBJECT,                                                              \
            .flags = CO_SCHEMA_REQUIRED,                                                           \
            .description = (spec_description),                                                     \
            .fields = (spec_fields)})

static const co_schema blueprint_root = {
    .name = "",
    .type = CO_SCHEMA_OBJECT,
    .description = "A Blueprint holds a small source tree in the cluster, for Components that "
                   "name it in sourceRef.blueprint.",
    .fields = ROOT_FIELDS("Blueprint", "The files of the Blueprint.", FIELDS(FILES_FIELD)),
};

static const co_schema version_root = {
    .name = "",
    .type = CO_SCHEMA_OBJECT,
    .description = "A BlueprintVersion is the immutable snapshot of one content of a Blueprint, "
                   "named <blueprint>--<digest>.",
    .fields = ROOT_FIELDS(
        "BlueprintVersion",
        "The snapshot: which Blueprint, its digest and revision, and its files.",
        FIELDS({.name = "blueprint",
                .type = CO_SCHEMA_STRING,
                .flags = CO_SCHEMA_REQUIRED,
                .description = "Name of the Blueprint, in the same namespace."},
               {.name = "digest",
                .type = CO_SCHEMA_STRING,
                .flags = CO_SCHEMA_REQUIRED,
                .description = "sha256 hex digest of the Blueprint's spec."},
               {.name = "revision",
                .type = CO_SCHEMA_STRING,
                .flags = CO_SCHEMA_REQUIRED,
                .description = "generation:<n>, the Blueprint's metadata.generation when "
                               "the snapshot was taken."},
               FILES_FIELD)),
};

static const co_schema *root_of(co_blueprint_type type)
{
    return type == CO_BLUEPRINT_TYPE_BLUEPRINT ? &blueprint_root : &version_root;
}

static const char *kind_of(co_blueprint_type type)
{
    return type == CO_BLUEPRINT_TYPE_BLUEPRINT ? CO_BLUEPRINT_KIND : CO_BLUEPRINT_VERSION_KIND;
}

co_blueprint_type co_blueprint_type_of(const struct json_object *obj)
{
    const char *api = co_json_str(obj, "apiVersion", NULL);
    const char *kind = co_json_str(obj, "kind", NULL);
    if (!api || !kind || strcmp(api, CO_BLUEPRINT_API_VERSION) != 0) {
        return CO_BLUEPRINT_TYPE_UNKNOWN;
    }
    if (strcmp(kind, CO_BLUEPRINT_KIND) == 0) {
        return CO_BLUEPRINT_TYPE_BLUEPRINT;
    }
    if (strcmp(kind, CO_BLUEPRINT_VERSION_KIND) == 0) {
        return CO_BLUEPRINT_TYPE_VERSION;
    }
    return CO_BLUEPRINT_TYPE_UNKNOWN;
}

/* ---------------------------------------------------------------------------------------------
 * Digest, names, labels
 * ------------------------------------------------------------------------------------------- */

int co_blueprint_digest(char out[CO_SHA256_HEX_LEN + 1], const struct json_object *files)
{
    if (files && !json_object_is_type(files, json_type_object)) {
        return co_error_set(CO_EINVALID, "spec.files: must be an object");
    }
    size_t n = 0;
    co_json__kv *kv = files ? co_json__members(files, 1, &n) : NULL;
    co_buf b = CO_BUF_INIT(CO_MAX_DOCUMENT);
    int rc = 0;
    /* Go leaves out an empty map (omitempty): [{}] */
    if (co_buf_puts(&b, n ? "[{\"files\":{" : "[{") < 0) {
        rc = CO_ETOOBIG;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!json_object_is_type(kv[i].val, json_type_string)) {
            rc = co_error_set(CO_EINVALID, "spec.files: the value of \"%.200s\" must be a string",
                              kv[i].key);
            break;
        }
        if ((i && co_buf_putc(&b, ',') < 0) ||
            co_json_go_quote(&b, kv[i].key, strlen(kv[i].key), 0) < 0 || co_buf_putc(&b, ':') < 0 ||
            co_json_go_quote(&b, json_object_get_string(kv[i].val), co_json_string_len(kv[i].val),
                             0) < 0) {
            rc = CO_ETOOBIG;
        }
    }
    if (rc == 0 && co_buf_puts(&b, n ? "}}]" : "}]") < 0) {
        rc = CO_ETOOBIG;
    }
    if (rc == CO_ETOOBIG) {
        co_error_set(CO_ETOOBIG, "spec.files: too large for its digest");
    }
    if (rc == 0) {
        co_sha256_hex_buf(out, &b);
    }
    co_buf_dispose(&b);
    free(kv);
    return rc;
}

char *co_blueprint_revision(int64_t generation)
{
    return co_xasprintf("generation:%" PRId64, generation);
}

char *co_blueprint_version_name(const char *blueprint, const char *digest)
{
    return co_xasprintf("%s" CO_BLUEPRINT_VERSION_SEPARATOR "%s", blueprint, digest);
}

char *co_blueprint_label_value(const char *name)
{
    if (strlen(name) <= 63) {
        return co_xstrdup(name);
    }
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, name, strlen(name));
    hex[63] = '\0';
    return co_xstrdup(hex);
}

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */

/* Why @p path is not a relative, clean file path, or NULL when it is one. A NUL byte cannot
 * occur: the JSON parser refuses a key holding one (co/json/json.h). */
static const char *path_problem(const char *path, size_t len)
{
    if (len == 0) {
        return "must not be empty";
    }
    if (memchr(path, '\\', len)) {
        return "must not contain a backslash";
    }
    if (path[0] == '/') {
        return "must be a relative path";
    }
    if (path[len - 1] == '/') {
        return "must not end with /";
    }
    const char *seg = path;
    const char *end = path + len;
    while (seg < end) {
        const char *slash = memchr(seg, '/', (size_t)(end - seg));
        size_t n = slash ? (size_t)(slash - seg) : (size_t)(end - seg);
        if (n == 0) {
            return "must not contain an empty segment (//)";
        }
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            return "must not contain . or .. segments";
        }
        if (n > CO_BLUEPRINT_SEGMENT_MAX) {
            return "must not contain a segment longer than 255 bytes";
        }
        seg += n + 1;
    }
    return NULL;
}

/* The file paths and the total size of a files object (already type-checked). */
static void check_files(co_field_errors *errs, const struct json_object *files, const char *path)
{
    if (!files || !json_object_is_type(files, json_type_object)) {
        return;
    }
    size_t total = 0;
    json_object_object_foreach ((struct json_object *)files, key, val) {
        size_t klen = strlen(key);
        const char *why = path_problem(key, klen);
        if (why) {
            char *fp = co_xasprintf("%s[%s]", path, key);
            co_field_errors_add_str(errs, CO_FIELD_INVALID, fp, key, "%s", why);
            free(fp);
        }
        total += klen + co_json_string_len(val);
    }
    if (total > CO_MAX_BLUEPRINT_FILES) {
        co_field_errors_add_novalue(errs, CO_FIELD_TOO_LONG, path,
                                    "paths and contents may have at most %d bytes together, "
                                    "found %zu",
                                    (int)CO_MAX_BLUEPRINT_FILES, total);
    }
}

/* The schema checks and unknown fields of the whole object; false when it is not an object. */
static bool check_object(co_field_errors *errs,
                         const struct json_object *obj,
                         co_blueprint_type type,
                         unsigned flags)
{
    const co_schema *root = root_of(type);
    unsigned mode = (flags & CO_BLUEPRINT_ALLOW_UNKNOWN_FIELDS) ? CO_SCHEMA_NO_UNKNOWN : 0;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        co_field_errors_add(errs, CO_FIELD_INVALID, "<root>", obj, "must be a JSON object");
        return false;
    }
    const char *kind = co_json_str(obj, "kind", NULL);
    const char *api = co_json_str(obj, "apiVersion", NULL);
    if (!kind || strcmp(kind, kind_of(type)) != 0) {
        const char *const kinds[] = {kind_of(type)};
        co_field_errors_unsupported(errs, "kind", kind, kinds, 1);
    }
    if (!api || strcmp(api, CO_BLUEPRINT_API_VERSION) != 0) {
        static const char *const versions[] = {CO_BLUEPRINT_API_VERSION};
        co_field_errors_unsupported(errs, "apiVersion", api, versions, 1);
    }
    for (const co_schema *f = root->fields; f->name; f++) {
        json_object *child = co_json__member(obj, f->name);
        if (!child && (f->flags & CO_SCHEMA_REQUIRED)) {
            co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, f->name, NULL);
        } else {
            co_schema__check(errs, child, f, f->name, mode);
        }
    }
    if (!(mode & CO_SCHEMA_NO_UNKNOWN)) {
        json_object_object_foreach ((json_object *)obj, key, val) {
            if (!json_object_is_type(val, json_type_null) && strcmp(key, "status") != 0 &&
                !co_schema__field(root, key)) {
                co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, key, "unknown field");
            }
        }
    }
    return true;
}

/* metadata.name: required, a DNS subdomain of at most @p max characters. */
static const char *check_name(co_field_errors *errs, const struct json_object *obj, size_t max)
{
    const char *name = co_json_meta_name(obj);
    if (!name || !name[0]) {
        co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, "metadata.name", NULL);
        return NULL;
    }
    if (strlen(name) > max) {
        co_field_errors_add_novalue(errs, CO_FIELD_TOO_LONG, "metadata.name",
                                    "may not be more than %zu bytes", max);
        return NULL;
    }
    if (!co_name__is_dns_subdomain(name)) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "metadata.name", name, "%s",
                                co_name__dns_subdomain_msg);
        return NULL;
    }
    return name;
}

int co_blueprint_validate(co_field_errors *errs, const struct json_object *obj, unsigned flags)
{
    co_field_errors mine = CO_FIELD_ERRORS_INIT;
    if (check_object(&mine, obj, CO_BLUEPRINT_TYPE_BLUEPRINT, flags)) {
        (void)check_name(&mine, obj, CO_BLUEPRINT_NAME_MAX);
        check_files(&mine, co_json_get(obj, "spec", "files", NULL), "spec.files");
    }
    int bad = !co_field_errors_empty(&mine);
    co_field_errors_move(errs, &mine);
    return bad ? CO_EINVALID : 0;
}

/* Whether @p s is 64 lowercase hexadecimal digits. */
static bool is_digest(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) {
            return false;
        }
    }
    return n == CO_SHA256_HEX_LEN;
}

/* Whether @p s is "generation:<n>" with n a positive decimal integer without leading zeros. */
static bool is_revision(const char *s)
{
    static const char prefix[] = "generation:";
    if (strncmp(s, prefix, sizeof(prefix) - 1) != 0) {
        return false;
    }
    const char *d = s + sizeof(prefix) - 1;
    if (d[0] < '1' || d[0] > '9' || strlen(d) > 19) {
        return false;
    }
    for (; *d; d++) {
        if (*d < '0' || *d > '9') {
            return false;
        }
    }
    return true;
}

static void check_version_spec(co_field_errors *errs, const struct json_object *obj)
{
    const struct json_object *spec = co_json__member(obj, "spec");
    const struct json_object *files = co_json__member(spec, "files");
    const char *bp = co_json_str(spec, "blueprint", NULL);
    const char *digest = co_json_str(spec, "digest", NULL);
    const char *revision = co_json_str(spec, "revision", NULL);
    if (bp && strlen(bp) > CO_BLUEPRINT_NAME_MAX) {
        co_field_errors_add_novalue(errs, CO_FIELD_TOO_LONG, "spec.blueprint",
                                    "may not be more than %d bytes", (int)CO_BLUEPRINT_NAME_MAX);
        bp = NULL;
    } else if (bp && !co_name__is_dns_subdomain(bp)) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.blueprint", bp, "%s",
                                co_name__dns_subdomain_msg);
        bp = NULL;
    }
    if (revision && !is_revision(revision)) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.revision", revision,
                                "must be generation:<n> with n a positive integer");
    }
    if (digest && !is_digest(digest)) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.digest", digest,
                                "must be 64 lowercase hexadecimal digits (sha256)");
        digest = NULL;
    }
    check_files(errs, files, "spec.files");
    char want[CO_SHA256_HEX_LEN + 1];
    if (digest && (!files || json_object_is_type(files, json_type_object))) {
        if (co_blueprint_digest(want, files) < 0) {
            co_error_clear(); /* a value of another type is reported by the schema check */
        } else if (strcmp(want, digest) != 0) {
            co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.digest", digest,
                                    "must be the digest of spec.files, %s", want);
        }
    }
    const char *name = co_json_meta_name(obj);
    if (name && name[0] && bp && digest) {
        char *expect = co_blueprint_version_name(bp, digest);
        if (strcmp(expect, name) != 0) {
            co_field_errors_add_str(errs, CO_FIELD_INVALID, "metadata.name", name,
                                    "must be %s (<spec.blueprint>--<spec.digest>)", expect);
        }
        free(expect);
    }
}

int co_blueprint_version_validate(co_field_errors *errs,
                                  const struct json_object *obj,
                                  unsigned flags)
{
    co_field_errors mine = CO_FIELD_ERRORS_INIT;
    if (check_object(&mine, obj, CO_BLUEPRINT_TYPE_VERSION, flags)) {
        (void)check_name(&mine, obj, 253);
        if (json_object_is_type(co_json__member(obj, "spec"), json_type_object)) {
            check_version_spec(&mine, obj);
        }
    }
    int bad = !co_field_errors_empty(&mine);
    co_field_errors_move(errs, &mine);
    return bad ? CO_EINVALID : 0;
}

int co_blueprint_version_validate_update(co_field_errors *errs,
                                         const struct json_object *new_obj,
                                         const struct json_object *old_obj)
{
    static const char *const fields[] = {"blueprint", "digest", "revision", "files"};
    struct json_object *a = co_json__member(new_obj, "spec");
    struct json_object *b = co_json__member(old_obj, "spec");
    size_t before = errs->len + errs->dropped;
    for (size_t i = 0; i < CO_ARRAY_SIZE(fields); i++) {
        struct json_object *fa = co_json__member(a, fields[i]);
        struct json_object *fb = co_json__member(b, fields[i]);
        if (!json_object_equal(fa, fb)) {
            char *p = co_xasprintf("spec.%s", fields[i]);
            co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, p,
                                        "field is immutable: a BlueprintVersion never changes");
            free(p);
        }
    }
    if (errs->len + errs->dropped == before && !json_object_equal(a, b)) {
        co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, "spec",
                                    "field is immutable: a BlueprintVersion never changes");
    }
    return errs->len + errs->dropped == before ? 0 : CO_EINVALID;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------------------------- */

static int refuse(co_field_errors *errs, const char *kind)
{
    co_buf msg = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = co_field_errors_format(&msg, errs);
    co_error_set(CO_EINVALID, "invalid %s: %s", kind,
                 rc == 0 ? co_buf_cstr(&msg) : "(too many errors)");
    co_buf_dispose(&msg);
    co_field_errors_dispose(errs);
    return CO_EINVALID;
}

static char *dup_or_null(const char *s)
{
    return s ? co_xstrdup(s) : NULL;
}

static co_blueprint_file *files_of(const struct json_object *files, size_t *n)
{
    *n = 0;
    co_json__kv *kv = files ? co_json__members(files, 1, n) : NULL;
    co_blueprint_file *f = co_xcalloc(*n ? *n : 1, sizeof(*f));
    for (size_t i = 0; i < *n; i++) {
        f[i].path = co_xstrdup(kv[i].key);
        f[i].len = co_json_string_len(kv[i].val);
        f[i].content = co_xmemdup(json_object_get_string(kv[i].val), f[i].len + 1);
    }
    free(kv);
    return f;
}

static void files_free(co_blueprint_file *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++) {
        free(f[i].path);
        free(f[i].content);
    }
    free(f);
}

int co_blueprint_parse(co_blueprint **out, const struct json_object *obj)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_blueprint_validate(&errs, obj, CO_BLUEPRINT_ALLOW_UNKNOWN_FIELDS) < 0) {
        return refuse(&errs, CO_BLUEPRINT_KIND);
    }
    const struct json_object *files = co_json_get(obj, "spec", "files", NULL);
    char digest[CO_SHA256_HEX_LEN + 1];
    int rc = co_blueprint_digest(digest, files);
    if (rc < 0) {
        return rc;
    }
    co_blueprint *b = co_xcalloc(1, sizeof(*b));
    b->ns = dup_or_null(co_json_meta_namespace(obj));
    b->name = co_xstrdup(co_json_meta_name(obj));
    int64_t gen = 0;
    if (co_json_get_int64(&gen, obj, "metadata", "generation", NULL) < 0) {
        co_error_clear();
        gen = 0;
    }
    b->generation = gen;
    b->files = files_of(files, &b->nfiles);
    memcpy(b->digest, digest, sizeof(digest));
    b->revision = co_blueprint_revision(gen);
    *out = b;
    return 0;
}

void co_blueprint_free(co_blueprint *b)
{
    if (!b) {
        return;
    }
    free(b->ns);
    free(b->name);
    files_free(b->files, b->nfiles);
    free(b->revision);
    free(b);
}

int co_blueprint_version_parse(co_blueprint_version **out, const struct json_object *obj)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_blueprint_version_validate(&errs, obj, CO_BLUEPRINT_ALLOW_UNKNOWN_FIELDS) < 0) {
        return refuse(&errs, CO_BLUEPRINT_VERSION_KIND);
    }
    const struct json_object *spec = co_json__member(obj, "spec");
    co_blueprint_version *v = co_xcalloc(1, sizeof(*v));
    v->ns = dup_or_null(co_json_meta_namespace(obj));
    v->name = co_xstrdup(co_json_meta_name(obj));
    v->blueprint = co_xstrdup(co_json_str(spec, "blueprint", NULL));
    v->digest = co_xstrdup(co_json_str(spec, "digest", NULL));
    v->revision = co_xstrdup(co_json_str(spec, "revision", NULL));
    v->files = files_of(co_json__member(spec, "files"), &v->nfiles);
    *out = v;
    return 0;
}

void co_blueprint_version_free(co_blueprint_version *v)
{
    if (!v) {
        return;
    }
    free(v->ns);
    free(v->name);
    free(v->blueprint);
    free(v->digest);
    free(v->revision);
    files_free(v->files, v->nfiles);
    free(v);
}

/* ---------------------------------------------------------------------------------------------
 * Writing a tree
 * ------------------------------------------------------------------------------------------- */

/* Creates the directories of @p rel (a clean relative path) below the directory @p root_fd and
 * returns a descriptor of the last one (the file's parent), or -1 with errno set and *base just
 * past the directory that could not be made or entered. Symlinks are never followed: only what
 * was created here, or plain directories, are entered. */
static int open_parent(int root_fd, const char *rel, const char **base)
{
    int fd = dup(root_fd);
    const char *seg = rel;
    const char *slash;
    while (fd >= 0 && (slash = strchr(seg, '/')) != NULL) {
        char *name = co_xstrndup(seg, (size_t)(slash - seg));
        if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            free(name);
            close(fd);
            *base = slash + 1;
            errno = e;
            return -1;
        }
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        free(name);
        close(fd);
        errno = e;
        fd = next;
        seg = slash + 1;
    }
    *base = seg;
    return fd;
}

int co_blueprint_write_files(const char *dir,
                             const co_blueprint_file *files,
                             size_t nfiles,
                             uint64_t *bytes)
{
    uint64_t total = 0;
    for (size_t i = 0; i < nfiles; i++) {
        const char *why = files[i].path ? path_problem(files[i].path, strlen(files[i].path))
                                        : "must not be empty";
        if (why) {
            return co_error_set(CO_EINVALID, "file path '%.300s' %s",
                                files[i].path ? files[i].path : "", why);
        }
    }
    if (mkdir(dir, 0755) < 0) {
        return co_error_set_os(CO_ERROR, "creating %s", dir);
    }
    int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0) {
        return co_error_set_os(CO_ERROR, "opening %s", dir);
    }
    int rc = 0;
    for (size_t i = 0; i < nfiles && rc == 0; i++) {
        const char *path = files[i].path;
        const char *base = path;
        int parent = open_parent(root, path, &base);
        if (parent < 0) {
            int dir_len = (int)(base - path) - 1;
            rc = errno == ENOTDIR && dir_len > 0
                     ? co_error_set(CO_EINVALID,
                                    "spec.files[%.300s]: %.*s is a file of the Blueprint too, "
                                    "not a directory",
                                    path, dir_len, path)
                     : co_error_set_os(CO_EINVALID, "writing %.300s", path);
            break;
        }
        int fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            rc = errno == EEXIST || errno == EISDIR
                     ? co_error_set(CO_EINVALID,
                                    "spec.files[%.300s]: a directory of the Blueprint too, not "
                                    "a file",
                                    path)
                     : co_error_set_os(CO_EINVALID, "writing %.300s", path);
        } else {
            size_t off = 0;
            while (off < files[i].len) {
                ssize_t w = write(fd, files[i].content + off, files[i].len - off);
                if (w < 0 && errno == EINTR) {
                    continue;
                }
                if (w <= 0) {
                    rc = co_error_set_os(CO_ERROR, "writing %.300s", files[i].path);
                    break;
                }
                off += (size_t)w;
            }
            if (close(fd) < 0 && rc == 0) {
                rc = co_error_set_os(CO_ERROR, "writing %.300s", files[i].path);
            }
            total += files[i].len + CO_BLUEPRINT_ENTRY_OVERHEAD;
        }
        close(parent);
    }
    close(root);
    if (rc == 0 && bytes) {
        *bytes = total;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The CRDs
 * ------------------------------------------------------------------------------------------- */

static void put_str(json_object *o, const char *key, const char *val)
{
    json_object_object_add(o, key, json_object_new_string(val));
}

static json_object *blueprint_crd(co_blueprint_type type)
{
    int bp = type == CO_BLUEPRINT_TYPE_BLUEPRINT;
    json_object *crd = json_object_new_object();
    put_str(crd, "apiVersion", "apiextensions.k8s.io/v1");
    put_str(crd, "kind", "CustomResourceDefinition");
    json_object *meta = json_object_new_object();
    put_str(meta, "name", bp ? CO_BLUEPRINT_CRD_NAME : CO_BLUEPRINT_VERSION_CRD_NAME);
    json_object_object_add(crd, "metadata", meta);
    json_object *spec = json_object_new_object();
    put_str(spec, "group", "core.cs.sap.com");
    json_object *names = json_object_new_object();
    put_str(names, "kind", kind_of(type));
    put_str(names, "listKind", bp ? "BlueprintList" : "BlueprintVersionList");
    put_str(names, "plural", bp ? "blueprints" : "blueprintversions");
    put_str(names, "singular", bp ? "blueprint" : "blueprintversion");
    json_object_object_add(spec, "names", names);
    put_str(spec, "scope", "Namespaced");
    json_object *versions = json_object_new_array();
    json_object *v = json_object_new_object();
    json_object *cols = json_object_new_array();
    if (!bp) {
        json_object *col = json_object_new_object();
        put_str(col, "description", "The Blueprint this is a version of");
        put_str(col, "jsonPath", ".spec.blueprint");
        put_str(col, "name", "Blueprint");
        put_str(col, "type", "string");
        json_object_array_add(cols, col);
        col = json_object_new_object();
        put_str(col, "description", "The Blueprint's generation when the snapshot was taken");
        put_str(col, "jsonPath", ".spec.revision");
        put_str(col, "name", "Revision");
        put_str(col, "type", "string");
        json_object_array_add(cols, col);
    }
    json_object *age = json_object_new_object();
    put_str(age, "description", "Time since the object was created");
    put_str(age, "jsonPath", ".metadata.creationTimestamp");
    put_str(age, "name", "Age");
    put_str(age, "type", "date");
    json_object_array_add(cols, age);
    json_object_object_add(v, "additionalPrinterColumns", cols);
    put_str(v, "name", "v1alpha1");
    json_object *schema = json_object_new_object();
    json_object_object_add(schema, "openAPIV3Schema", co_schema__openapi(root_of(type)));
    json_object_object_add(v, "schema", schema);
    json_object_object_add(v, "served", json_object_new_boolean(1));
    json_object_object_add(v, "storage", json_object_new_boolean(1));
    json_object_array_add(versions, v);
    json_object_object_add(spec, "versions", versions);
    json_object_object_add(crd, "spec", spec);
    return crd;
}

int co_blueprint_crd(struct json_object **out, co_blueprint_type type)
{
    if (type != CO_BLUEPRINT_TYPE_BLUEPRINT && type != CO_BLUEPRINT_TYPE_VERSION) {
        return co_error_set(CO_EINVALID, "no CRD for blueprint type %d", (int)type);
    }
    *out = blueprint_crd(type);
    return 0;
}

int co_blueprint_crd_yaml(co_buf *out, co_blueprint_type type)
{
    json_object *crd = NULL;
    int rc = co_blueprint_crd(&crd, type);
    if (rc == 0) {
        rc = co_schema__yaml(out, crd);
        json_object_put(crd);
    }
    return rc;
}
