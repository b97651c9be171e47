/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for archive extraction: the formats, the confinement rules against hostile
 * archives (each rejected with a message naming the entry, nothing written outside, nothing
 * half-extracted left behind), the caps, and path resolution inside a tree.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "co/source/archive.h"
#include "co/util/caps.h"
#include "tests/support/test_archive_builder.h"
#include "tests/support/test_support.h"

typedef struct fixture {
    char *dir;  /* the test's private directory */
    char *dest; /* dir/out: the extraction target */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = co_test_tmpdir();
    f->dest = co_xasprintf("%s/sub/out", f->dir);
    char *sub = co_xasprintf("%s/sub", f->dir);
    mkdir(sub, 0755);
    free(sub);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    co_test_rmtree(f->dir);
    free(f->dir);
    free(f->dest);
    free(f);
    return 0;
}

static char *path_in(const fixture *f, const char *rel)
{
    return co_xasprintf("%s/%s", f->dest, rel);
}

static char *read_in(const fixture *f, const char *rel)
{
    char *p = path_in(f, rel);
    char *data = co_test_read_file(p, NULL);
    free(p);
    return data;
}

/* Counts the entries of dir/sub (the destination's parent): leftovers of a failed run show up. */
static int entries_beside_dest(const fixture *f)
{
    char *sub = co_xasprintf("%s/sub", f->dir);
    DIR *d = opendir(sub);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) { // NOLINT(concurrency-mt-unsafe)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            n++;
        }
    }
    closedir(d);
    free(sub);
    return n;
}

/* Extraction must fail with @p code, mention @p needle, and leave nothing behind. */
static void
expect_rejected(fixture *f, int format, const tab_entry *e, size_t n, int code, const char *needle)
{
    size_t len;
    void *data = tab_build(format, e, n, &len);
    assert_co_fail_with(code,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), needle);
    struct stat st;
    assert_int_equal(lstat(f->dest, &st), -1);
    assert_int_equal(entries_beside_dest(f), 0);
    /* nothing escaped next to the test directory either */
    char *evil = co_xasprintf("%s/evil", f->dir);
    assert_int_equal(lstat(evil, &st), -1);
    free(evil);
    free(data);
}

static const tab_entry normal_tree[] = {
    {TAB_DIR, 0, "chart/", NULL, 0},
    {TAB_FILE, 0, "chart/Chart.yaml", "name: x\n", 0},
    {TAB_FILE, 0, "./chart/templates/cm.yaml", "kind: ConfigMap\n", 0},
    {TAB_FILE, 0755, "bin/run.sh", "#!/bin/sh\n", 0},
    {TAB_SYMLINK, 0, "chart/link.yaml", "Chart.yaml", 0},
    {TAB_SYMLINK, 0, "up", "chart/../bin", 0},
    {TAB_FILE, 0, "empty", NULL, 0},
    /* last: zip cannot express hard links, so zip tests leave it out */
    {TAB_HARDLINK, 0, "chart/hard.yaml", "chart/Chart.yaml", 0},
};

/* The number of entries of normal_tree a format can carry. */
static size_t normal_entries(int tab_format)
{
    return CO_ARRAY_SIZE(normal_tree) - (tab_format == TAB_ZIP ? 1 : 0);
}

static void check_normal_tree(fixture *f, int tab_format)
{
    char *s = read_in(f, "chart/Chart.yaml");
    assert_string_equal(s, "name: x\n");
    free(s);
    s = read_in(f, "chart/templates/cm.yaml");
    assert_string_equal(s, "kind: ConfigMap\n");
    free(s);
    s = read_in(f, "chart/link.yaml");
    assert_string_equal(s, "name: x\n");
    free(s);
    if (tab_format != TAB_ZIP) {
        s = read_in(f, "chart/hard.yaml");
        assert_string_equal(s, "name: x\n");
        free(s);
    }
    s = read_in(f, "up/run.sh");
    assert_string_equal(s, "#!/bin/sh\n");
    free(s);
    s = read_in(f, "empty");
    assert_string_equal(s, "");
    free(s);
    struct stat st;
    char *p = path_in(f, "bin/run.sh");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    free(p);
    p = path_in(f, "chart/Chart.yaml");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    free(p);
    p = path_in(f, "chart/link.yaml");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    free(p);
    /* only the destination itself was created beside it */
    assert_int_equal(entries_beside_dest(f), 1);
}

static void extract_format(void **state, int tab_format, co_archive_format format)
{
    fixture *f = *state;
    size_t len;
    void *data = tab_build(tab_format, normal_tree, normal_entries(tab_format), &len);
    co_archive_stats st = {0};
    assert_co_pass(co_archive_extract_mem(data, len, format, f->dest, NULL, CO_ARCHIVE_SYNC, &st));
    assert_int_equal(st.bytes, 8 + 16 + 10);
    assert_true(st.entries >= normal_entries(tab_format));
    check_normal_tree(f, tab_format);
    free(data);
}

static void test_archive__extracts_tar_gz(void **state)
{
    extract_format(state, TAB_TAR_GZ, CO_ARCHIVE_TAR_GZ);
}

static void test_archive__extracts_plain_tar(void **state)
{
    extract_format(state, TAB_TAR, CO_ARCHIVE_TAR);
}

static void test_archive__extracts_zip(void **state)
{
    extract_format(state, TAB_ZIP, CO_ARCHIVE_ZIP);
}

static void test_archive__auto_detects_every_format(void **state)
{
    fixture *f = *state;
    int formats[] = {TAB_TAR_GZ, TAB_TAR, TAB_ZIP};
    for (size_t i = 0; i < CO_ARRAY_SIZE(formats); i++) {
        size_t len;
        void *data = tab_build(formats[i], normal_tree, normal_entries(formats[i]), &len);
        assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
        check_normal_tree(f, formats[i]);
        assert_co_pass(co_archive_remove_tree(f->dest));
        free(data);
    }
}

static void test_archive__extracts_from_file(void **state)
{
    fixture *f = *state;
    size_t len;
    void *data = tab_build(TAB_TAR_GZ, normal_tree, CO_ARRAY_SIZE(normal_tree), &len);
    char *file = co_xasprintf("%s/a.tgz", f->dir);
    co_test_write_file(file, data, len);
    assert_co_pass(co_archive_extract_file(file, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    check_normal_tree(f, TAB_TAR_GZ);
    char *missing = co_xasprintf("%s/nope.tgz", f->dir);
    char *dest2 = co_xasprintf("%s/other", f->dir);
    assert_co_fail_with(CO_ENOTFOUND,
                        co_archive_extract_file(missing, CO_ARCHIVE_AUTO, dest2, NULL, 0, NULL));
    free(missing);
    free(dest2);
    free(file);
    free(data);
}

static void test_archive__extracts_compressed_tars(void **state)
{
    fixture *f = *state;
    const struct {
        int tab;
        co_archive_format format;
    } cases[] = {{TAB_TAR_BZ2, CO_ARCHIVE_TAR_BZ2},
                 {TAB_TAR_ZST, CO_ARCHIVE_TAR_ZST},
                 {TAB_TAR_XZ, CO_ARCHIVE_TAR_XZ}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        size_t len;
        void *data = tab_build(cases[i].tab, normal_tree, normal_entries(cases[i].tab), &len);
        assert_co_pass(co_archive_extract_mem(data, len, cases[i].format, f->dest, NULL, 0, NULL));
        check_normal_tree(f, cases[i].tab);
        assert_co_pass(co_archive_remove_tree(f->dest));
        assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
        check_normal_tree(f, cases[i].tab);
        assert_co_pass(co_archive_remove_tree(f->dest));
        /* another compression than the one demanded is refused */
        co_archive_format other = cases[(i + 1) % CO_ARRAY_SIZE(cases)].format;
        assert_co_fail_with(CO_EINVALID,
                            co_archive_extract_mem(data, len, other, f->dest, NULL, 0, NULL));
        assert_contains(co_error_last(), "-compressed tar archive");
        assert_int_equal(entries_beside_dest(f), 0);
        free(data);
    }
}

/* CO_ARCHIVE_TAR_ANY reads a tar whatever its compression, and nothing but a tar. */
static void test_archive__tar_any_detects_the_compression(void **state)
{
    fixture *f = *state;
    const int tars[] = {TAB_TAR, TAB_TAR_GZ, TAB_TAR_BZ2, TAB_TAR_ZST, TAB_TAR_XZ};
    for (size_t i = 0; i < CO_ARRAY_SIZE(tars); i++) {
        size_t len;
        void *data = tab_build(tars[i], normal_tree, normal_entries(tars[i]), &len);
        assert_co_pass(
            co_archive_extract_mem(data, len, CO_ARCHIVE_TAR_ANY, f->dest, NULL, 0, NULL));
        check_normal_tree(f, tars[i]);
        assert_co_pass(co_archive_remove_tree(f->dest));
        free(data);
    }
    size_t len;
    void *zip = tab_build(TAB_ZIP, normal_tree, normal_entries(TAB_ZIP), &len);
    assert_co_fail_with(
        CO_EINVALID, co_archive_extract_mem(zip, len, CO_ARCHIVE_TAR_ANY, f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), "tar archive");
    assert_int_equal(entries_beside_dest(f), 0);
    free(zip);
    void *gz = tab_compress(TAB_GZIP, "a: 1\n", 5, 0, &len);
    assert_co_fail_with(
        CO_EINVALID, co_archive_extract_mem(gz, len, CO_ARCHIVE_TAR_ANY, f->dest, NULL, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 0);
    free(gz);
    assert_string_equal(co_archive_format_name(CO_ARCHIVE_TAR_ANY), "tar");
}

static const char yaml_doc[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

static void test_archive__single_yaml_becomes_resources_yaml(void **state)
{
    fixture *f = *state;
    const int compressions[] = {-1, TAB_GZIP, TAB_BZIP2, TAB_ZSTD, TAB_XZ};
    for (size_t i = 0; i < CO_ARRAY_SIZE(compressions); i++) {
        size_t len = sizeof(yaml_doc) - 1;
        void *data = compressions[i] < 0 ? co_xmemdup(yaml_doc, len)
                                         : tab_compress(compressions[i], yaml_doc, len, 0, &len);
        co_archive_stats st = {0};
        assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_YAML, f->dest, NULL,
                                              CO_ARCHIVE_SYNC, &st));
        assert_int_equal(st.entries, 1);
        assert_int_equal(st.bytes, sizeof(yaml_doc) - 1);
        char *text = read_in(f, CO_ARCHIVE_YAML_NAME);
        assert_string_equal(text, yaml_doc);
        free(text);
        struct stat sb;
        char *p = path_in(f, CO_ARCHIVE_YAML_NAME);
        assert_int_equal(lstat(p, &sb), 0);
        assert_true(S_ISREG(sb.st_mode));
        assert_int_equal(sb.st_mode & 0777, 0644);
        free(p);
        assert_int_equal(entries_beside_dest(f), 1);
        assert_co_pass(co_archive_remove_tree(f->dest));
        free(data);
    }
    /* from a file too */
    char *file = co_xasprintf("%s/app.yaml", f->dir);
    co_test_write_file(file, yaml_doc, sizeof(yaml_doc) - 1);
    assert_co_pass(co_archive_extract_file(file, CO_ARCHIVE_YAML, f->dest, NULL, 0, NULL));
    char *text = read_in(f, CO_ARCHIVE_YAML_NAME);
    assert_string_equal(text, yaml_doc);
    free(text);
    free(file);
}

static void test_archive__empty_yaml_is_an_empty_file(void **state)
{
    fixture *f = *state;
    co_archive_stats st = {0};
    assert_co_pass(co_archive_extract_mem("", 0, CO_ARCHIVE_YAML, f->dest, NULL, 0, &st));
    char *text = read_in(f, CO_ARCHIVE_YAML_NAME);
    assert_string_equal(text, "");
    free(text);
    assert_int_equal(st.entries, 1);
}

/* A compressed YAML file is held to the same caps as an archive: the file cap for its size,
 * and one layer of compression only. */
static void test_archive__yaml_bomb_is_capped(void **state)
{
    fixture *f = *state;
    const int compressions[] = {TAB_GZIP, TAB_BZIP2, TAB_ZSTD, TAB_XZ};
    co_archive_limits lim = {.max_file = 8u << 20};
    for (size_t i = 0; i < CO_ARRAY_SIZE(compressions); i++) {
        size_t len;
        void *data = tab_compress(compressions[i], "a: ", 3, 64u << 20, &len);
        assert_true(len < (1u << 20));
        assert_co_fail_with(
            CO_ETOOBIG, co_archive_extract_mem(data, len, CO_ARCHIVE_YAML, f->dest, &lim, 0, NULL));
        assert_contains(co_error_last(),
                        "entry " CO_ARCHIVE_YAML_NAME ": file larger than the limit of 8388608");
        assert_int_equal(entries_beside_dest(f), 0);
        free(data);
    }
    co_archive_limits total = {.max_total = 4u << 20};
    size_t len;
    void *data = tab_compress(TAB_GZIP, NULL, 0, 5u << 20, &len);
    assert_co_fail_with(
        CO_ETOOBIG, co_archive_extract_mem(data, len, CO_ARCHIVE_YAML, f->dest, &total, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 0);
    /* compressed twice: refused before anything is written */
    size_t len2;
    void *twice = tab_compress(TAB_GZIP, data, len, 0, &len2);
    assert_co_fail_with(
        CO_EINVALID, co_archive_extract_mem(twice, len2, CO_ARCHIVE_YAML, f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), "not a YAML file or a compressed one");
    assert_int_equal(entries_beside_dest(f), 0);
    free(twice);
    free(data);
}

/* Hostile entries are refused whichever reader the download's format selects. */
static void test_archive__confinement_holds_for_every_format(void **state)
{
    fixture *f = *state;
    const struct {
        int tab;
        co_archive_format format;
    } formats[] = {{TAB_ZIP, CO_ARCHIVE_ZIP},         {TAB_TAR, CO_ARCHIVE_TAR},
                   {TAB_TAR_GZ, CO_ARCHIVE_TAR_GZ},   {TAB_TAR_BZ2, CO_ARCHIVE_TAR_BZ2},
                   {TAB_TAR_ZST, CO_ARCHIVE_TAR_ZST}, {TAB_TAR_XZ, CO_ARCHIVE_TAR_XZ}};
    char *abs = co_xasprintf("%s/evil", f->dir);
    const tab_entry hostile[][2] = {
        {{TAB_FILE, 0, "ok.yaml", "x", 0}, {TAB_FILE, 0, "../../evil", "pwned", 0}},
        {{TAB_FILE, 0, "ok.yaml", "x", 0}, {TAB_FILE, 0, "a/../../../evil", "pwned", 0}},
        {{TAB_FILE, 0, "ok.yaml", "x", 0}, {TAB_FILE, 0, abs, "pwned", 0}},
        {{TAB_DIR, 0, "a/", NULL, 0}, {TAB_SYMLINK, 0, "a/l", "../../evil", 0}},
        {{TAB_SYMLINK, 0, "l", abs, 0}, {TAB_FILE, 0, "ok.yaml", "x", 0}},
    };
    const char *needles[] = {"contains '..'", "contains '..'", "absolute paths are not allowed",
                             "points outside the archive", "is an absolute path"};
    for (size_t i = 0; i < CO_ARRAY_SIZE(formats); i++) {
        for (size_t j = 0; j < CO_ARRAY_SIZE(hostile); j++) {
            size_t len;
            void *data = tab_build(formats[i].tab, hostile[j], 2, &len);
            int rc = co_archive_extract_mem(data, len, formats[i].format, f->dest, NULL, 0, NULL);
            if (rc != CO_EINVALID || !strstr(co_error_last(), needles[j])) {
                fail_msg("format %zu case %zu: rc %d: %s", i, j, rc, co_error_last());
            }
            struct stat st;
            assert_int_equal(lstat(abs, &st), -1);
            assert_int_equal(entries_beside_dest(f), 0);
            free(data);
        }
    }
    /* a zip whose files expand far beyond their size hits the caps, as a tar does */
    tab_entry bomb[] = {{TAB_FILE, 0, "a", NULL, 64u << 20}};
    size_t len;
    void *data = tab_build(TAB_ZIP, bomb, 1, &len);
    assert_true(len < (1u << 20));
    co_archive_limits lim = {.max_file = 8u << 20};
    assert_co_fail_with(CO_ETOOBIG,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_ZIP, f->dest, &lim, 0, NULL));
    assert_contains(co_error_last(), "entry a: file larger than the limit of 8388608 bytes");
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);
    free(abs);
}

static void test_archive__format_chosen_by_content_type_and_url(void **state)
{
    (void)state;
    const struct {
        const char *content_type;
        const char *url;
        co_archive_format want;
    } cases[] = {
        /* Content-Type first */
        {"application/gzip", "https://h/a.tar.gz", CO_ARCHIVE_TAR_GZ},
        {"application/x-gzip", "https://h/download?id=3", CO_ARCHIVE_TAR_GZ},
        {"application/gzip", "https://h/app.yaml.gz", CO_ARCHIVE_YAML},
        {"application/x-bzip2", "https://h/a.tar.bz2", CO_ARCHIVE_TAR_BZ2},
        {"application/bzip2", "https://h/app.yml.bz2", CO_ARCHIVE_YAML},
        {"application/zstd", "https://h/a", CO_ARCHIVE_TAR_ZST},
        {"application/x-xz", "https://h/a", CO_ARCHIVE_TAR_XZ},
        {"application/x-tar", "https://h/a.zip", CO_ARCHIVE_TAR},
        {"application/tar+gzip", "https://h/a", CO_ARCHIVE_TAR_GZ},
        {"application/x-tar+bzip2", "https://h/a", CO_ARCHIVE_TAR_BZ2},
        {"Application/ZIP; charset=binary", "https://h/a.tar.gz", CO_ARCHIVE_ZIP},
        {"application/x-zip-compressed", "https://h/a", CO_ARCHIVE_ZIP},
        {"application/yaml", "https://h/a", CO_ARCHIVE_YAML},
        {"text/x-yaml; charset=utf-8", "https://h/a.tar.gz", CO_ARCHIVE_YAML},
        {"application/yaml+gzip", "https://h/a", CO_ARCHIVE_YAML},
        {"text/yaml+bzip2", "https://h/a", CO_ARCHIVE_YAML},
        /* then the URL path's suffix */
        {"application/octet-stream", "https://h/a.tar.gz", CO_ARCHIVE_TAR_GZ},
        {NULL, "https://h/a.tgz?x=.zip", CO_ARCHIVE_TAR_GZ},
        {"text/plain", "https://h/a.tar.bz2#frag", CO_ARCHIVE_TAR_BZ2},
        {NULL, "https://h/a.tbz2", CO_ARCHIVE_TAR_BZ2},
        {NULL, "https://h/a.tar.zst", CO_ARCHIVE_TAR_ZST},
        {NULL, "https://h/a.tzst", CO_ARCHIVE_TAR_ZST},
        {NULL, "https://h/a.tar.xz", CO_ARCHIVE_TAR_XZ},
        {NULL, "https://h/a.tar", CO_ARCHIVE_TAR},
        {"", "https://h/a.ZIP", CO_ARCHIVE_ZIP},
        {"text/plain; charset=utf-8", "https://raw.h/o/r/main/app.yaml", CO_ARCHIVE_YAML},
        {NULL, "https://h/app.yml", CO_ARCHIVE_YAML},
        {NULL, "https://h/app.yaml.gz", CO_ARCHIVE_YAML},
        {NULL, "https://h/app.yml.zst", CO_ARCHIVE_YAML},
        /* else the content decides */
        {NULL, "https://h/artifact", CO_ARCHIVE_AUTO},
        {"application/octet-stream", "https://h/a.gz", CO_ARCHIVE_AUTO},
        {NULL, "https://h.tar.gz/", CO_ARCHIVE_AUTO},
        {NULL, "https://h/x?file=a.yaml", CO_ARCHIVE_AUTO},
        {NULL, NULL, CO_ARCHIVE_AUTO},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(cases); i++) {
        co_archive_format got = co_archive_format_for(cases[i].content_type, cases[i].url);
        if (got != cases[i].want) {
            fail_msg("case %zu (%s, %s): got %s, want %s", i,
                     cases[i].content_type ? cases[i].content_type : "(none)",
                     cases[i].url ? cases[i].url : "(none)", co_archive_format_name(got),
                     co_archive_format_name(cases[i].want));
        }
    }
}

static void test_archive__format_mismatch_is_rejected(void **state)
{
    fixture *f = *state;
    size_t len;
    void *data = tab_build(TAB_TAR, normal_tree, 2, &len);
    assert_co_fail_with(
        CO_EINVALID, co_archive_extract_mem(data, len, CO_ARCHIVE_TAR_GZ, f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), "not a gzip-compressed tar archive");
    assert_co_fail_with(CO_EINVALID,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_ZIP, f->dest, NULL, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);
}

static void test_archive__garbage_is_rejected(void **state)
{
    fixture *f = *state;
    const char junk[] = "this is not an archive at all, just text\n";
    assert_co_fail_with(CO_EINVALID, co_archive_extract_mem(junk, sizeof(junk) - 1, CO_ARCHIVE_AUTO,
                                                            f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), "not a");
    assert_co_fail_with(CO_EINVALID,
                        co_archive_extract_mem("", 0, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 0);
}

static void test_archive__truncated_archive_leaves_nothing(void **state)
{
    fixture *f = *state;
    tab_entry big[] = {
        {TAB_FILE, 0, "a.yaml", "a: 1\n", 0},
        {TAB_FILE, 0, "big.bin", NULL, 300000},
        {TAB_FILE, 0, "z.yaml", "z: 1\n", 0},
    };
    int formats[] = {TAB_TAR_GZ, TAB_TAR, TAB_ZIP};
    for (size_t i = 0; i < CO_ARRAY_SIZE(formats); i++) {
        size_t len;
        char *data = tab_build(formats[i], big, CO_ARRAY_SIZE(big), &len);
        int rc = co_archive_extract_mem(data, len / 2, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL);
        assert_int_equal(rc, CO_EINVALID);
        struct stat st;
        assert_int_equal(lstat(f->dest, &st), -1);
        assert_int_equal(entries_beside_dest(f), 0);
        free(data);
    }
}

static void test_archive__rejects_absolute_paths(void **state)
{
    fixture *f = *state;
    char *abs = co_xasprintf("%s/evil", f->dir);
    tab_entry e[] = {{TAB_FILE, 0, "ok.yaml", "x", 0}, {TAB_FILE, 0, abs, "pwned", 0}};
    expect_rejected(f, TAB_TAR_GZ, e, 2, CO_EINVALID, "absolute paths are not allowed");
    assert_contains(co_error_last(), abs);
    free(abs);
}

static void test_archive__rejects_traversal(void **state)
{
    fixture *f = *state;
    const char *names[] = {"../../evil", "a/../../../evil", "..", "x/.."};
    for (size_t i = 0; i < CO_ARRAY_SIZE(names); i++) {
        tab_entry e[] = {{TAB_FILE, 0, names[i], "pwned", 0}};
        expect_rejected(f, TAB_TAR, e, 1, CO_EINVALID, "contains '..'");
        assert_contains(co_error_last(), names[i]);
        expect_rejected(f, TAB_ZIP, e, 1, CO_EINVALID, "contains '..'");
    }
}

static void test_archive__rejects_links_pointing_outside(void **state)
{
    fixture *f = *state;
    char *abs = co_xasprintf("%s/evil", f->dir);
    tab_entry absolute[] = {{TAB_SYMLINK, 0, "l", abs, 0}};
    expect_rejected(f, TAB_TAR_GZ, absolute, 1, CO_EINVALID, "is an absolute path");
    tab_entry up[] = {{TAB_DIR, 0, "a/", NULL, 0}, {TAB_SYMLINK, 0, "a/l", "../../evil", 0}};
    expect_rejected(f, TAB_TAR_GZ, up, 2, CO_EINVALID, "points outside the archive");
    assert_contains(co_error_last(), "a/l");
    /* each link is harmless alone; together a/b/c/../../.. climbs out through "c" -> ".." */
    tab_entry chain[] = {
        {TAB_DIR, 0, "a/b/", NULL, 0},
        {TAB_SYMLINK, 0, "a/b/c", "..", 0},
        {TAB_SYMLINK, 0, "l", "a/b/c/../../..", 0},
    };
    expect_rejected(f, TAB_TAR_GZ, chain, 3, CO_EINVALID, "points outside the tree");
    assert_contains(co_error_last(), "entry l");
    /* a link loop */
    tab_entry loop[] = {{TAB_SYMLINK, 0, "x", "y", 0}, {TAB_SYMLINK, 0, "y", "x", 0}};
    expect_rejected(f, TAB_TAR, loop, 2, CO_EINVALID, "too many levels of symbolic links");
    free(abs);
}

static void test_archive__never_writes_through_a_symlink(void **state)
{
    fixture *f = *state;
    /* a harmless link to a directory inside, then a file "through" it */
    tab_entry e[] = {
        {TAB_DIR, 0, "real/", NULL, 0},
        {TAB_SYMLINK, 0, "alias", "real", 0},
        {TAB_FILE, 0, "alias/x", "through", 0},
    };
    expect_rejected(f, TAB_TAR_GZ, e, 3, CO_EINVALID, "is a symlink or not a directory");
    assert_contains(co_error_last(), "alias/x");
    /* a link replaced by a file of the same name is fine: the file is written, not the target */
    tab_entry again[] = {
        {TAB_FILE, 0, "target", "original", 0},
        {TAB_SYMLINK, 0, "l", "target", 0},
        {TAB_FILE, 0, "l", "replaced", 0},
    };
    size_t len;
    void *data = tab_build(TAB_TAR, again, 3, &len);
    assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    char *s = read_in(f, "target");
    assert_string_equal(s, "original");
    free(s);
    s = read_in(f, "l");
    assert_string_equal(s, "replaced");
    free(s);
    free(data);
}

static void test_archive__rejects_hardlinks_outside(void **state)
{
    fixture *f = *state;
    tab_entry abs[] = {{TAB_HARDLINK, 0, "h", "/etc/passwd", 0}};
    expect_rejected(f, TAB_TAR, abs, 1, CO_EINVALID, "absolute paths are not allowed");
    assert_contains(co_error_last(), "entry h");
    tab_entry up[] = {{TAB_HARDLINK, 0, "h", "../../evil", 0}};
    expect_rejected(f, TAB_TAR, up, 1, CO_EINVALID, "contains '..'");
    tab_entry missing[] = {{TAB_HARDLINK, 0, "h", "not-there", 0}};
    expect_rejected(f, TAB_TAR, missing, 1, CO_EINVALID, "not");
    /* a hard link to a symlink that points outside would be a way around the link check */
    tab_entry via_link[] = {{TAB_DIR, 0, "d/", NULL, 0},
                            {TAB_SYMLINK, 0, "d/s", ".", 0},
                            {TAB_HARDLINK, 0, "h", "d/s", 0}};
    expect_rejected(f, TAB_TAR, via_link, 3, CO_EINVALID, "not a regular file of the archive");
}

static void test_archive__rejects_devices_and_fifos(void **state)
{
    fixture *f = *state;
    tab_entry dev[] = {{TAB_FILE, 0, "ok", "x", 0}, {TAB_CHARDEV, 0, "dev/null", NULL, 0}};
    expect_rejected(f, TAB_TAR, dev, 2, CO_EINVALID,
                    "entry dev/null: device files are not allowed");
    tab_entry fifo[] = {{TAB_FIFO, 0, "pipe", NULL, 0}};
    expect_rejected(f, TAB_TAR_GZ, fifo, 1, CO_EINVALID, "entry pipe: fifos are not allowed");
}

static void test_archive__decompression_bomb_is_capped(void **state)
{
    fixture *f = *state;
    /* 64 MiB of zeros compresses to ~64 KiB */
    tab_entry one[] = {{TAB_FILE, 0, "bomb", NULL, 64u << 20}};
    size_t len;
    void *data = tab_build(TAB_TAR_GZ, one, 1, &len);
    assert_true(len < (1u << 20));
    co_archive_limits lim = {.max_file = 8u << 20};
    assert_co_fail_with(CO_ETOOBIG,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, &lim, 0, NULL));
    assert_contains(co_error_last(), "entry bomb: file larger than the limit of 8388608 bytes");
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);

    tab_entry many[] = {
        {TAB_FILE, 0, "a", NULL, 3u << 20},
        {TAB_FILE, 0, "b", NULL, 3u << 20},
        {TAB_FILE, 0, "c", NULL, 3u << 20},
    };
    data = tab_build(TAB_ZIP, many, 3, &len);
    co_archive_limits total = {.max_total = 8u << 20};
    assert_co_fail_with(
        CO_ETOOBIG, co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, &total, 0, NULL));
    assert_contains(co_error_last(), "entry c: archive expands to more than the limit");
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);
}

static void test_archive__too_many_files_is_capped(void **state)
{
    fixture *f = *state;
    size_t len;
    void *data = tab_build_many(CO_MAX_EXTRACT_ENTRIES + 1, &len);
    assert_co_fail_with(CO_ETOOBIG,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    assert_contains(co_error_last(), "archive has more than 100000 entries");
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);
}

static void test_archive__implicit_directories_count_as_entries(void **state)
{
    fixture *f = *state;
    /* one entry, but 50 directories to create */
    char deep[512];
    size_t o = 0;
    for (int i = 0; i < 50; i++) {
        o += (size_t)snprintf(deep + o, sizeof(deep) - o, "d/");
    }
    snprintf(deep + o, sizeof(deep) - o, "f");
    tab_entry e[] = {{TAB_FILE, 0, deep, "x", 0}};
    size_t len;
    void *data = tab_build(TAB_TAR, e, 1, &len);
    co_archive_limits lim = {.max_entries = 10};
    assert_co_fail_with(CO_ETOOBIG,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, &lim, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 0);
    free(data);
}

static void test_archive__existing_destination_is_refused(void **state)
{
    fixture *f = *state;
    mkdir(f->dest, 0755);
    size_t len;
    void *data = tab_build(TAB_TAR, normal_tree, 2, &len);
    assert_co_fail_with(CO_EEXISTS,
                        co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    assert_int_equal(entries_beside_dest(f), 1);
    free(data);
}

static void test_archive__duplicate_entries_last_wins(void **state)
{
    fixture *f = *state;
    tab_entry e[] = {
        {TAB_FILE, 0, "a", "first", 0},
        {TAB_FILE, 0, "a", "second", 0},
        {TAB_DIR, 0, "d/", NULL, 0},
        {TAB_DIR, 0, "d/", NULL, 0},
    };
    size_t len;
    void *data = tab_build(TAB_TAR, e, 4, &len);
    assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    char *s = read_in(f, "a");
    assert_string_equal(s, "second");
    free(s);
    free(data);
}

static void test_archive__file_over_directory_is_rejected(void **state)
{
    fixture *f = *state;
    tab_entry clash[] = {{TAB_DIR, 0, "d/", NULL, 0}, {TAB_FILE, 0, "d", "x", 0}};
    expect_rejected(f, TAB_TAR, clash, 2, CO_EINVALID, "entry d: a directory of that name");
}

static void test_archive__names_with_odd_bytes(void **state)
{
    fixture *f = *state;
    tab_entry e[] = {
        {TAB_FILE, 0, "caf\xc3\xa9.yaml", "utf8", 0},
        {TAB_FILE, 0, "with space#hash.yaml", "x", 0},
    };
    size_t len;
    void *data = tab_build(TAB_TAR_GZ, e, 2, &len);
    assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    char *s = read_in(f, "caf\xc3\xa9.yaml");
    assert_non_null(s);
    assert_string_equal(s, "utf8");
    free(s);
    free(data);
    assert_co_pass(co_archive_remove_tree(f->dest));
    /* control characters are escaped in messages */
    tab_entry bad[] = {{TAB_FILE, 0, "/abs\n\x1b[31m", "x", 0}};
    expect_rejected(f, TAB_TAR, bad, 1, CO_EINVALID, "/abs\\x0a\\x1b[31m");
}

static void test_archive__resolve_stays_inside(void **state)
{
    fixture *f = *state;
    size_t len;
    void *data = tab_build(TAB_TAR_GZ, normal_tree, CO_ARRAY_SIZE(normal_tree), &len);
    assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    free(data);
    char *out = NULL;
    assert_co_pass(co_archive_resolve(&out, f->dest, ""));
    assert_string_equal(out, f->dest);
    free(out);
    assert_co_pass(co_archive_resolve(&out, f->dest, "/chart/"));
    char *want = path_in(f, "chart");
    assert_string_equal(out, want);
    free(want);
    free(out);
    /* through an inside link */
    assert_co_pass(co_archive_resolve(&out, f->dest, "up/run.sh"));
    want = path_in(f, "bin/run.sh");
    assert_string_equal(out, want);
    free(want);
    free(out);
    assert_co_pass(co_archive_resolve(&out, f->dest, "chart/../bin"));
    free(out);
    assert_co_fail_with(CO_ENOTFOUND, co_archive_resolve(&out, f->dest, "nope/deeper"));
    assert_string_equal(co_error_last(), "no such file or directory: nope/deeper");
    assert_co_fail_with(CO_EINVALID, co_archive_resolve(&out, f->dest, "../sub"));
    assert_contains(co_error_last(), "points outside the tree");
    assert_co_fail_with(CO_EINVALID, co_archive_resolve(&out, f->dest, "chart/../../out"));
    /* a link planted after extraction cannot lead out either */
    char *planted = path_in(f, "planted");
    assert_int_equal(symlink("/etc", planted), 0);
    assert_co_fail_with(CO_EINVALID, co_archive_resolve(&out, f->dest, "planted/passwd"));
    assert_contains(co_error_last(), "absolute path");
    free(planted);
}

static void test_archive__remove_tree_does_not_follow_links(void **state)
{
    fixture *f = *state;
    char *keep = co_xasprintf("%s/keep", f->dir);
    co_test_write_file(keep, "k", 1);
    tab_entry e[] = {{TAB_FILE, 0, "a/b/c", "x", 0}};
    size_t len;
    void *data = tab_build(TAB_TAR, e, 1, &len);
    assert_co_pass(co_archive_extract_mem(data, len, CO_ARCHIVE_AUTO, f->dest, NULL, 0, NULL));
    char *link = path_in(f, "a/outside");
    assert_int_equal(symlink(f->dir, link), 0);
    assert_co_pass(co_archive_remove_tree(f->dest));
    struct stat st;
    assert_int_equal(lstat(f->dest, &st), -1);
    assert_int_equal(stat(keep, &st), 0);
    assert_co_pass(co_archive_remove_tree(f->dest)); /* missing: fine */
    free(link);
    free(keep);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_archive__extracts_tar_gz, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__extracts_plain_tar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__extracts_zip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__auto_detects_every_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__extracts_from_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__extracts_compressed_tars, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__tar_any_detects_the_compression, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__single_yaml_becomes_resources_yaml, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__empty_yaml_is_an_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__yaml_bomb_is_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__confinement_holds_for_every_format, setup,
                                        teardown),
        cmocka_unit_test(test_archive__format_chosen_by_content_type_and_url),
        cmocka_unit_test_setup_teardown(test_archive__format_mismatch_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__garbage_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__truncated_archive_leaves_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__rejects_absolute_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__rejects_traversal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__rejects_links_pointing_outside, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__never_writes_through_a_symlink, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__rejects_hardlinks_outside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__rejects_devices_and_fifos, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__decompression_bomb_is_capped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__too_many_files_is_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__implicit_directories_count_as_entries, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__existing_destination_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__duplicate_entries_last_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__file_over_directory_is_rejected, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_archive__names_with_odd_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__resolve_stays_inside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive__remove_tree_does_not_follow_links, setup,
                                        teardown),
    };
    const char *filter = getenv("CO_TEST_FILTER"); // NOLINT(concurrency-mt-unsafe)
    if (filter) {
        cmocka_set_test_filter(filter);
    }
    return cmocka_run_group_tests_name("archive", tests, NULL, NULL);
}
