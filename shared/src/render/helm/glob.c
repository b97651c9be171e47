/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two pattern languages Helm uses on chart paths: Go's filepath.Match (.helmignore rules)
 * and gobwas/glob with '/' as separator (.Files.Glob, where `**` crosses directories and
 * `{a,b}` lists alternatives). Both work on '/'-separated paths.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/common.h"
#include "helm_int.h"

/* Go's utf8.DecodeRuneInString, with -1 of width 0 at the end of the string. */
static int32_t rune_at(const char *s, size_t len, size_t *w)
{
    if (len == 0) {
        *w = 0;
        return -1;
    }
    return co_utf8_decode_rune(s, len, w);
}

/* ---- filepath.Match ---------------------------------------------------------------------- */

typedef struct str {
    const char *p;
    size_t n;
} str;

static void adv(str *s, size_t k)
{
    s->p += k;
    s->n -= k;
}

/* Go's scanChunk: leading stars, then the chunk up to the next star outside a class. */
static void scan_chunk(str *pattern, bool *star, str *chunk)
{
    *star = false;
    while (pattern->n > 0 && pattern->p[0] == '*') {
        adv(pattern, 1);
        *star = true;
    }
    bool inrange = false;
    size_t i;
    for (i = 0; i < pattern->n; i++) {
        char c = pattern->p[i];
        if (c == '\\') {
            if (i + 1 < pattern->n) {
                i++;
            }
        } else if (c == '[') {
            inrange = true;
        } else if (c == ']') {
            inrange = false;
        } else if (c == '*' && !inrange) {
            break;
        }
    }
    *chunk = (str){pattern->p, i};
    adv(pattern, i);
}

/* Go's getEsc: one possibly escaped character of a class; false for a bad pattern. */
static bool get_esc(str *chunk, int32_t *r)
{
    if (chunk->n == 0 || chunk->p[0] == '-' || chunk->p[0] == ']') {
        return false;
    }
    if (chunk->p[0] == '\\') {
        adv(chunk, 1);
        if (chunk->n == 0) {
            return false;
        }
    }
    size_t w;
    *r = rune_at(chunk->p, chunk->n, &w);
    if (*r == 0xFFFD && w == 1) {
        return false;
    }
    adv(chunk, w);
    return chunk->n > 0;
}

/* Go's matchChunk. Returns 1 on a match (rest in *rest), 0 on none, -1 for a bad pattern. */
static int match_chunk(str chunk, str s, str *rest)
{
    bool failed = false;
    while (chunk.n > 0) {
        if (!failed && s.n == 0) {
            failed = true;
        }
        char c = chunk.p[0];
        if (c == '[') {
            int32_t r = 0;
            if (!failed) {
                size_t w;
                r = rune_at(s.p, s.n, &w);
                adv(&s, w);
            }
            adv(&chunk, 1);
            bool negated = false;
            if (chunk.n > 0 && chunk.p[0] == '^') {
                negated = true;
                adv(&chunk, 1);
            }
            bool match = false;
            int nrange = 0;
            for (;;) {
                if (chunk.n > 0 && chunk.p[0] == ']' && nrange > 0) {
                    adv(&chunk, 1);
                    break;
                }
                int32_t lo;
                int32_t hi;
                if (!get_esc(&chunk, &lo)) {
                    return -1;
                }
                hi = lo;
                if (chunk.p[0] == '-') {
                    adv(&chunk, 1);
                    if (!get_esc(&chunk, &hi)) {
                        return -1;
                    }
                }
                if (lo <= r && r <= hi) {
                    match = true;
                }
                nrange++;
            }
            if (match == negated) {
                failed = true;
            }
        } else if (c == '?') {
            if (!failed) {
                if (s.p[0] == '/') {
                    failed = true;
                }
                size_t w;
                (void)rune_at(s.p, s.n, &w);
                adv(&s, w);
            }
            adv(&chunk, 1);
        } else {
            if (c == '\\') {
                adv(&chunk, 1);
                if (chunk.n == 0) {
                    return -1;
                }
            }
            if (!failed) {
                if (chunk.p[0] != s.p[0]) {
                    failed = true;
                }
                adv(&s, 1);
            }
            adv(&chunk, 1);
        }
    }
    if (failed) {
        return 0;
    }
    *rest = s;
    return 1;
}

/* Go's filepath.Match: 1, 0, or -1 for a malformed pattern. */
static int path_match(const char *pattern, const char *name)
{
    str pat = {pattern, strlen(pattern)};
    str nm = {name, strlen(name)};
    while (pat.n > 0) {
        bool star;
        str chunk;
        scan_chunk(&pat, &star, &chunk);
        if (star && chunk.n == 0) {
            return memchr(nm.p, '/', nm.n) == NULL;
        }
        str t;
        int ok = match_chunk(chunk, nm, &t);
        if (ok == 1 && (t.n == 0 || pat.n > 0)) {
            nm = t;
            continue;
        }
        if (ok < 0) {
            return -1;
        }
        bool next = false;
        if (star) {
            for (size_t i = 0; i < nm.n && nm.p[i] != '/'; i++) {
                str sub = {nm.p + i + 1, nm.n - i - 1};
                int ok2 = match_chunk(chunk, sub, &t);
                if (ok2 == 1) {
                    if (pat.n == 0 && t.n > 0) {
                        continue;
                    }
                    nm = t;
                    next = true;
                    break;
                }
                if (ok2 < 0) {
                    return -1;
                }
            }
        }
        if (next) {
            continue;
        }
        while (pat.n > 0) {
            scan_chunk(&pat, &star, &chunk);
            str empty = {"", 0};
            if (match_chunk(chunk, empty, &t) < 0) {
                return -1;
            }
        }
        return 0;
    }
    return nm.n == 0;
}

bool co_helm__path_match(const char *pattern, const char *name)
{
    return path_match(pattern, name) == 1;
}

bool co_helm__path_pattern_ok(const char *pattern)
{
    return path_match(pattern, "abc") >= 0;
}

/* ---- gobwas/glob ------------------------------------------------------------------------- */

/* Whether the pattern compiles: classes and alternatives closed, no trailing escape. */
static bool glob_valid(const char *p)
{
    int braces = 0;
    for (; *p; p++) {
        if (*p == '\\') {
            if (!p[1]) {
                return false;
            }
            p++;
        } else if (*p == '[') {
            const char *e = p + 1;
            if (*e == '!') {
                e++;
            }
            while (*e && *e != ']') {
                e++;
            }
            if (!*e || e == p + 1 || (p[1] == '!' && e == p + 2)) {
                return false;
            }
            p = e;
        } else if (*p == '{') {
            braces++;
        } else if (*p == '}') {
            if (braces == 0) {
                return false;
            }
            braces--;
        }
    }
    return braces == 0;
}

/* Finds the '}' closing the '{' at p[0] and the top-level commas inside. */
static const char *brace_end(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
        } else if (*p == '[') {
            while (*p && *p != ']') {
                p++;
            }
            if (!*p) {
                return NULL;
            }
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}') {
            if (--depth == 0) {
                return p;
            }
        }
    }
    return NULL;
}

static bool glob_rec(const char *p, const char *s, int budget);

/* Tries each alternative of the brace group at @p p followed by the rest of the pattern. */
static bool glob_alts(const char *p, const char *s, int budget)
{
    const char *end = brace_end(p);
    if (!end) {
        return false;
    }
    const char *rest = end + 1;
    size_t rest_len = strlen(rest);
    const char *a = p + 1;
    int depth = 0;
    for (const char *q = a;; q++) {
        if (*q == '\\' && q < end) {
            q++;
            continue;
        }
        if (*q == '{') {
            depth++;
        } else if (*q == '}' && depth > 0) {
            depth--;
        } else if ((*q == ',' && depth == 0) || q == end) {
            size_t alen = (size_t)(q - a);
            char *combined = co_xmalloc(alen + rest_len + 1);
            memcpy(combined, a, alen);
            memcpy(combined + alen, rest, rest_len + 1);
            bool ok = glob_rec(combined, s, budget - 1);
            free(combined);
            if (ok) {
                return true;
            }
            if (q == end) {
                return false;
            }
            a = q + 1;
        }
    }
}

static bool glob_rec(const char *p, const char *s, int budget)
{
    if (budget <= 0) {
        return false;
    }
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            while (*p == '*') {
                p++;
            }
            for (const char *t = s;; t++) {
                if (glob_rec(p, t, budget - 1)) {
                    return true;
                }
                if (!*t) {
                    return false;
                }
            }
        }
        if (*p == '*') {
            p++;
            for (const char *t = s;; t++) {
                if (glob_rec(p, t, budget - 1)) {
                    return true;
                }
                if (!*t || *t == '/') {
                    return false;
                }
            }
        }
        if (*p == '{') {
            return glob_alts(p, s, budget);
        }
        if (*p == '?') {
            if (!*s || *s == '/') {
                return false;
            }
            size_t w;
            (void)rune_at(s, strlen(s), &w);
            s += w;
            p++;
            continue;
        }
        if (*p == '[') {
            if (!*s) {
                return false;
            }
            size_t w;
            int32_t r = rune_at(s, strlen(s), &w);
            p++;
            bool neg = false;
            if (*p == '!') {
                neg = true;
                p++;
            }
            bool match = false;
            while (*p && *p != ']') {
                size_t lw;
                int32_t lo = rune_at(p, strlen(p), &lw);
                p += lw;
                int32_t hi = lo;
                if (*p == '-' && p[1] && p[1] != ']') {
                    hi = rune_at(p + 1, strlen(p + 1), &lw);
                    p += 1 + lw;
                }
                if (lo <= r && r <= hi) {
                    match = true;
                }
            }
            if (*p == ']') {
                p++;
            }
            if (match == neg) {
                return false;
            }
            s += w;
            continue;
        }
        if (*p == '\\' && p[1]) {
            p++;
        }
        if (*p != *s) {
            return false;
        }
        p++;
        s++;
    }
    return *s == '\0';
}

bool co_helm__glob_match(const char *pattern, const char *name, bool *ok)
{
    *ok = glob_valid(pattern);
    if (!*ok) {
        return true; /* Helm falls back to "**" */
    }
    return glob_rec(pattern, name, 100000);
}
