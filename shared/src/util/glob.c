/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glob matching and gitignore-style pattern sets. The matcher works segment by segment so that
 * "**" can swallow whole directories; within a segment it backtracks over '*' in the usual
 * way, bounded by the segment's length.
 */
#include "co/util/glob.h"

#include <stdlib.h>
#include <string.h>

#include "co/util/caps.h"
#include "co/util/error.h"

/* Matches a character class starting at @p p ('[' already consumed); returns the position
 * after ']' and sets *ok, or NULL when the class is not closed. */
static const char *match_class(const char *p, char c, int *ok)
{
    int neg = 0;
    if (*p == '!' || *p == '^') {
        neg = 1;
        p++;
    }
    int matched = 0;
    int first = 1;
    while (*p && (first || *p != ']')) {
        first = 0;
        char lo = *p;
        if (lo == '\\' && p[1]) {
            lo = *++p;
        }
        p++;
        char hi = lo;
        if (*p == '-' && p[1] && p[1] != ']') {
            hi = p[1];
            if (hi == '\\' && p[2]) {
                hi = p[2];
                p++;
            }
            p += 2;
        }
        if (c >= lo && c <= hi) {
            matched = 1;
        }
    }
    if (*p != ']') {
        return NULL;
    }
    *ok = matched != neg;
    return p + 1;
}

/* Matches one segment: pattern [p, pe) against string [s, se); neither contains '/'. */
static int match_segment(const char *p, const char *pe, const char *s, const char *se)
{
    while (p < pe) {
        char c = *p;
        if (c == '*') {
            while (p < pe && *p == '*') {
                p++;
            }
            if (p == pe) {
                return 1;
            }
            for (const char *t = s; t <= se; t++) {
                if (match_segment(p, pe, t, se)) {
                    return 1;
                }
            }
            return 0;
        }
        if (s == se) {
            return 0;
        }
        if (c == '?') {
            p++;
            s++;
            continue;
        }
        if (c == '[') {
            int ok = 0;
            const char *next = match_class(p + 1, *s, &ok);
            if (next && next <= pe) {
                if (!ok) {
                    return 0;
                }
                p = next;
                s++;
                continue;
            }
            /* unclosed class: a literal '[' */
        }
        if (c == '\\' && p + 1 < pe) {
            c = *++p;
        }
        if (c != *s) {
            return 0;
        }
        p++;
        s++;
    }
    return s == se;
}

static const char *seg_end(const char *s)
{
    const char *e = strchr(s, '/');
    return e ? e : s + strlen(s);
}

static int match_from(const char *p, const char *s, int flags)
{
    for (;;) {
        const char *pe = seg_end(p);
        if ((flags & CO_GLOB_DOUBLESTAR) && pe - p == 2 && p[0] == '*' && p[1] == '*') {
            const char *rest = *pe ? pe + 1 : pe;
            if (!*pe) {
                return 1; /* trailing "**" matches everything that is left */
            }
            /* zero or more whole segments */
            for (const char *t = s;;) {
                if (match_from(rest, t, flags)) {
                    return 1;
                }
                const char *te = seg_end(t);
                if (!*te) {
                    return 0;
                }
                t = te + 1;
            }
        }
        const char *se = seg_end(s);
        if (!match_segment(p, pe, s, se)) {
            return 0;
        }
        if (!*pe || !*se) {
            return !*pe && !*se;
        }
        p = pe + 1;
        s = se + 1;
    }
}

bool co_glob_match(const char *pattern, const char *path, int flags)
{
    return match_from(pattern, path, flags);
}

/* --- ignore files ------------------------------------------------------------------------- */

typedef struct ig_rule {
    char *pattern;
    int negate;
    int dir_only;
    int anchored;
} ig_rule;

struct co_ignore {
    ig_rule *v;
    size_t n;
};

int co_ignore_parse(co_ignore **out, const char *text, size_t len)
{
    if (len > CO_MAX_CONFIG_FILE) {
        return co_error_set(CO_ETOOBIG, "ignore file is larger than %zu bytes",
                            (size_t)CO_MAX_CONFIG_FILE);
    }
    co_ignore *ig = co_xcalloc(1, sizeof(*ig));
    size_t cap = 0;
    for (size_t i = 0; i < len;) {
        const char *line = text + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        i += n + (nl ? 1 : 0);
        if (n && line[n - 1] == '\r') {
            n--;
        }
        /* trailing spaces go unless escaped */
        while (n && line[n - 1] == ' ' && !(n >= 2 && line[n - 2] == '\\')) {
            n--;
        }
        if (n == 0 || line[0] == '#') {
            continue;
        }
        ig_rule r = {0};
        if (line[0] == '!') {
            r.negate = 1;
            line++;
            n--;
        } else if (line[0] == '\\' && n > 1 && (line[1] == '#' || line[1] == '!')) {
            line++;
            n--;
        }
        if (n && line[n - 1] == '/') {
            r.dir_only = 1;
            n--;
        }
        if (n == 0) {
            continue;
        }
        const char *slash = memchr(line, '/', n);
        if (slash) {
            r.anchored = 1;
            if (line[0] == '/') {
                line++;
                n--;
            }
        }
        if (n == 0) {
            continue;
        }
        r.pattern = co_xstrndup(line, n);
        if (ig->n == cap) {
            cap = cap ? cap * 2 : 8;
            ig->v = co_xreallocarray(ig->v, cap, sizeof(ig_rule));
        }
        ig->v[ig->n++] = r;
    }
    *out = ig;
    return 0;
}

/* The verdict of the rules for one path (no parent check): 1 ignored, 0 not. */
static int rules_match(const co_ignore *ig, const char *path, int is_dir)
{
    int ignored = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < ig->n; i++) {
        const ig_rule *r = &ig->v[i];
        if (r->dir_only && !is_dir) {
            continue;
        }
        int m = r->anchored ? co_glob_match(r->pattern, path, CO_GLOB_DOUBLESTAR)
                            : co_glob_match(r->pattern, base, CO_GLOB_DOUBLESTAR);
        if (m) {
            ignored = !r->negate;
        }
    }
    return ignored;
}

bool co_ignore_match(const co_ignore *ig, const char *path, bool is_dir)
{
    if (!ig) {
        return false;
    }
    char *copy = co_xstrdup(path);
    int ignored = 0;
    for (char *p = strchr(copy, '/'); p && !ignored; p = strchr(p + 1, '/')) {
        *p = '\0';
        ignored = rules_match(ig, copy, 1);
        *p = '/';
    }
    if (!ignored) {
        ignored = rules_match(ig, copy, is_dir);
    }
    free(copy);
    return ignored;
}

void co_ignore_free(co_ignore *ig)
{
    if (!ig) {
        return;
    }
    for (size_t i = 0; i < ig->n; i++) {
        free(ig->v[i].pattern);
    }
    free(ig->v);
    free(ig);
}
