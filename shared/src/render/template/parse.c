/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lexer and parser for Go's template language. Both follow text/template/parse state for
 * state and token for token (a pull lexer with three tokens of look-ahead in the parser),
 * because the positions and line numbers in error messages, and which inputs are errors at
 * all, depend on exactly when each token is read. Parse trees are allocated in the set's arena
 * and point into a private copy of the source.
 *
 * Differences to Go are bounds only: nesting of parentheses and control structures is capped
 * at CO_MAX_TEMPLATE_NESTING (Go caps parentheses at 10000 and nesting not at all).
 */
#include <errno.h>
#include <math.h>
#include <ctype.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/strconv.h"
#include "co/util/caps.h"
#include "co/util/error.h"
#include "tpl.h"

/* ------------------------------------------------------------------------------------------ */
/* Lexer                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef enum item_type {
    I_ERROR,
    I_BOOL,
    I_CHAR,
    I_CHAR_CONSTANT,
    I_COMMENT,
    I_COMPLEX,
    I_ASSIGN,
    I_DECLARE,
    I_EOF,
    I_FIELD,
    I_IDENTIFIER,
    I_LEFT_DELIM,
    I_LEFT_PAREN,
    I_NUMBER,
    I_PIPE,
    I_RAW_STRING,
    I_RIGHT_DELIM,
    I_RIGHT_PAREN,
    I_SPACE,
    I_STRING,
    I_TEXT,
    I_VARIABLE,
    I_KEYWORD,
    I_BLOCK,
    I_BREAK,
    I_CONTINUE,
    I_DOT,
    I_DEFINE,
    I_ELSE,
    I_END,
    I_IF,
    I_NIL,
    I_RANGE,
    I_TEMPLATE,
    I_WITH,
} item_type;

typedef struct item {
    item_type typ;
    size_t pos;
    const char *val;
    size_t len;
    int line;
} item;

typedef struct lexer lexer;

struct lexer {
    const char *input;
    size_t input_len;
    const char *left;
    size_t left_len;
    const char *right;
    size_t right_len;
    size_t pos;
    size_t start;
    bool at_eof;
    int paren_depth;
    int line;
    int start_line;
    item it;
    bool inside_action;
    char errbuf[256];
};

#define EOF_RUNE (-1)

static int32_t lnext(lexer *l)
{
    if (l->pos >= l->input_len) {
        l->at_eof = true;
        return EOF_RUNE;
    }
    size_t w;
    int32_t r = co_utf8_decode_rune(l->input + l->pos, l->input_len - l->pos, &w);
    l->pos += w;
    if (r == '\n') {
        l->line++;
    }
    return r;
}

static void lbackup(lexer *l)
{
    if (!l->at_eof && l->pos > 0) {
        /* step back over one UTF-8 sequence as utf8.DecodeLastRuneInString does */
        size_t end = l->pos;
        size_t start = end - 1;
        size_t lim = end >= 4 ? end - 4 : 0;
        while (start > lim && ((unsigned char)l->input[start] & 0xC0) == 0x80) {
            start--;
        }
        size_t w;
        int32_t r = co_utf8_decode_rune(l->input + start, end - start, &w);
        if (start + w != end) {
            r = 0xFFFD;
            w = 1;
        }
        l->pos -= w;
        if (r == '\n') {
            l->line--;
        }
    }
}

static int32_t lpeek(lexer *l)
{
    int32_t r = lnext(l);
    lbackup(l);
    return r;
}

static int count_nl(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++) {
        c += s[i] == '\n';
    }
    return c;
}

static item this_item(lexer *l, item_type t)
{
    item i = {t, l->start, l->input + l->start, l->pos - l->start, l->start_line};
    l->start = l->pos;
    l->start_line = l->line;
    return i;
}

static void emit_item(lexer *l, item i)
{
    l->it = i;
}

static void emit(lexer *l, item_type t)
{
    emit_item(l, this_item(l, t));
}

static void ignore(lexer *l)
{
    l->line += count_nl(l->input + l->start, l->pos - l->start);
    l->start = l->pos;
    l->start_line = l->line;
}

static bool accept(lexer *l, const char *valid)
{
    int32_t r = lnext(l);
    if (r > 0 && r < 0x80 && strchr(valid, (int)r)) {
        return true;
    }
    lbackup(l);
    return false;
}

static void accept_run(lexer *l, const char *valid)
{
    for (;;) {
        int32_t r = lnext(l);
        if (!(r > 0 && r < 0x80 && strchr(valid, (int)r))) {
            break;
        }
    }
    lbackup(l);
}

/* %#U of a rune: U+0041 'A' */
static void fmt_rune_u(char *out, size_t cap, int32_t r)
{
    if (r == EOF_RUNE) {
        snprintf(out, cap, "U+FFFFFFFFFFFFFFFF");
        return;
    }
    int n = snprintf(out, cap, "U+%04X", (unsigned)r);
    if (tpl_is_print(r) && n > 0 && (size_t)n + 8 < cap) {
        char enc[4];
        size_t w = co_utf8_encode(enc, r);
        snprintf(out + n, cap - (size_t)n, " '%.*s'", (int)w, enc);
    }
}

CO_PRINTF(2, 3) static void lerrorf(lexer *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->errbuf, sizeof(l->errbuf), fmt, ap);
    va_end(ap);
    l->it = (item){I_ERROR, l->start, l->errbuf, strlen(l->errbuf), l->start_line};
    l->start = 0;
    l->pos = 0;
    l->input_len = 0;
}

static bool is_space(int32_t r)
{
    return r == ' ' || r == '\t' || r == '\r' || r == '\n';
}

static bool is_alnum(int32_t r)
{
    return r == '_' || tpl_is_letter(r) || tpl_is_digit(r);
}

static bool has_prefix(const lexer *l, size_t at, const char *p, size_t n)
{
    return at <= l->input_len && l->input_len - at >= n && memcmp(l->input + at, p, n) == 0;
}

static bool has_left_trim(const lexer *l, size_t at)
{
    return at + 2 <= l->input_len && l->input[at] == '-' && is_space(l->input[at + 1]);
}

static bool has_right_trim(const lexer *l, size_t at)
{
    return at + 2 <= l->input_len && is_space(l->input[at]) && l->input[at + 1] == '-';
}

static bool at_right_delim(const lexer *l, bool *trim)
{
    if (has_right_trim(l, l->pos) && has_prefix(l, l->pos + 2, l->right, l->right_len)) {
        *trim = true;
        return true;
    }
    *trim = false;
    return has_prefix(l, l->pos, l->right, l->right_len);
}

static size_t right_trim_len(const char *s, size_t n)
{
    size_t k = n;
    while (k > 0 && is_space(s[k - 1])) {
        k--;
    }
    return n - k;
}

static size_t left_trim_len(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && is_space(s[k])) {
        k++;
    }
    return k;
}

typedef enum lstate {
    S_EMITTED, /* an item is ready */
    S_TEXT,
    S_LEFT_DELIM,
    S_COMMENT,
    S_INSIDE,
} lstate;

static const char *find(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || n < m) {
        return NULL;
    }
    return memmem(hay, n, needle, m);
}

static lstate lex_text(lexer *l)
{
    const char *x = find(l->input + l->pos, l->input_len - l->pos, l->left, l->left_len);
    if (x) {
        size_t off = (size_t)(x - (l->input + l->pos));
        if (off > 0) {
            l->pos += off;
            size_t trim = 0;
            if (has_left_trim(l, l->pos + l->left_len)) {
                trim = right_trim_len(l->input + l->start, l->pos - l->start);
            }
            l->pos -= trim;
            l->line += count_nl(l->input + l->start, l->pos - l->start);
            item i = this_item(l, I_TEXT);
            l->pos += trim;
            ignore(l);
            if (i.len > 0) {
                emit_item(l, i);
                return S_EMITTED;
            }
        }
        return S_LEFT_DELIM;
    }
    l->pos = l->input_len;
    if (l->pos > l->start) {
        l->line += count_nl(l->input + l->start, l->pos - l->start);
        emit(l, I_TEXT);
        return S_EMITTED;
    }
    emit(l, I_EOF);
    return S_EMITTED;
}

static lstate lex_left_delim(lexer *l)
{
    l->pos += l->left_len;
    bool trim = has_left_trim(l, l->pos);
    size_t after = trim ? 2 : 0;
    if (has_prefix(l, l->pos + after, "/*", 2)) {
        l->pos += after;
        ignore(l);
        return S_COMMENT;
    }
    item i = this_item(l, I_LEFT_DELIM);
    l->inside_action = true;
    l->pos += after;
    ignore(l);
    l->paren_depth = 0;
    emit_item(l, i);
    return S_EMITTED;
}

static lstate lex_comment(lexer *l)
{
    l->pos += 2;
    const char *x = find(l->input + l->pos, l->input_len - l->pos, "*/", 2);
    if (!x) {
        lerrorf(l, "unclosed comment");
        return S_EMITTED;
    }
    l->pos = (size_t)(x - l->input) + 2;
    bool trim;
    if (!at_right_delim(l, &trim)) {
        lerrorf(l, "comment ends before closing delimiter");
        return S_EMITTED;
    }
    l->line += count_nl(l->input + l->start, l->pos - l->start);
    (void)this_item(l, I_COMMENT);
    if (trim) {
        l->pos += 2;
    }
    l->pos += l->right_len;
    if (trim) {
        l->pos += left_trim_len(l->input + l->pos, l->input_len - l->pos);
    }
    ignore(l);
    return S_TEXT;
}

static lstate lex_right_delim(lexer *l)
{
    bool trim;
    (void)at_right_delim(l, &trim);
    if (trim) {
        l->pos += 2;
        ignore(l);
    }
    l->pos += l->right_len;
    item i = this_item(l, I_RIGHT_DELIM);
    if (trim) {
        l->pos += left_trim_len(l->input + l->pos, l->input_len - l->pos);
        ignore(l);
    }
    l->inside_action = false;
    emit_item(l, i);
    return S_EMITTED;
}

static lstate lex_space(lexer *l)
{
    int spaces = 0;
    for (;;) {
        int32_t r = lpeek(l);
        if (!is_space(r)) {
            break;
        }
        lnext(l);
        spaces++;
    }
    if (has_right_trim(l, l->pos - 1) && has_prefix(l, l->pos + 1, l->right, l->right_len)) {
        lbackup(l);
        if (spaces == 1) {
            return lex_right_delim(l);
        }
    }
    emit(l, I_SPACE);
    return S_EMITTED;
}

static bool at_terminator(lexer *l)
{
    int32_t r = lpeek(l);
    if (is_space(r)) {
        return true;
    }
    switch (r) {
    case EOF_RUNE:
    case '.':
    case ',':
    case '|':
    case ':':
    case ')':
    case '(':
        return true;
    default:
        break;
    }
    return has_prefix(l, l->pos, l->right, l->right_len);
}

static const struct {
    const char *word;
    item_type typ;
} keywords[] = {
    {"block", I_BLOCK},
    {"break", I_BREAK},
    {"continue", I_CONTINUE},
    {"define", I_DEFINE},
    {"else", I_ELSE},
    {"end", I_END},
    {"if", I_IF},
    {"range", I_RANGE},
    {"nil", I_NIL},
    {"template", I_TEMPLATE},
    {"with", I_WITH},
};

static void bad_character(lexer *l, int32_t r)
{
    char u[32];
    fmt_rune_u(u, sizeof(u), r);
    lerrorf(l, "bad character %s", u);
}

static lstate lex_identifier(lexer *l)
{
    for (;;) {
        int32_t r = lnext(l);
        if (is_alnum(r)) {
            continue;
        }
        lbackup(l);
        const char *word = l->input + l->start;
        size_t n = l->pos - l->start;
        if (!at_terminator(l)) {
            bad_character(l, r);
            return S_EMITTED;
        }
        for (size_t k = 0; k < CO_ARRAY_SIZE(keywords); k++) {
            if (strlen(keywords[k].word) == n && memcmp(keywords[k].word, word, n) == 0) {
                emit(l, keywords[k].typ);
                return S_EMITTED;
            }
        }
        if (word[0] == '.') {
            emit(l, I_FIELD);
        } else if ((n == 4 && memcmp(word, "true", 4) == 0) ||
                   (n == 5 && memcmp(word, "false", 5) == 0)) {
            emit(l, I_BOOL);
        } else {
            emit(l, I_IDENTIFIER);
        }
        return S_EMITTED;
    }
}

static lstate lex_field_or_variable(lexer *l, item_type typ)
{
    if (at_terminator(l)) {
        emit(l, typ == I_VARIABLE ? I_VARIABLE : I_DOT);
        return S_EMITTED;
    }
    int32_t r;
    for (;;) {
        r = lnext(l);
        if (!is_alnum(r)) {
            lbackup(l);
            break;
        }
    }
    if (!at_terminator(l)) {
        bad_character(l, r);
        return S_EMITTED;
    }
    emit(l, typ);
    return S_EMITTED;
}

/* Scans to the closing quote; a backslash escapes the next rune except EOF and newline. */
static lstate lex_quoted(lexer *l, int32_t quote, item_type typ, const char *what)
{
    for (;;) {
        int32_t r = lnext(l);
        if (r == '\\') {
            r = lnext(l);
            if (r != EOF_RUNE && r != '\n') {
                continue;
            }
        }
        if (r == EOF_RUNE || r == '\n') {
            lerrorf(l, "unterminated %s", what);
            return S_EMITTED;
        }
        if (r == quote) {
            break;
        }
    }
    emit(l, typ);
    return S_EMITTED;
}

static lstate lex_raw_quote(lexer *l)
{
    for (;;) {
        int32_t r = lnext(l);
        if (r == EOF_RUNE) {
            lerrorf(l, "unterminated raw quoted string");
            return S_EMITTED;
        }
        if (r == '`') {
            break;
        }
    }
    emit(l, I_RAW_STRING);
    return S_EMITTED;
}

static bool scan_number(lexer *l)
{
    accept(l, "+-");
    const char *digits = "0123456789_";
    if (accept(l, "0")) {
        if (accept(l, "xX")) {
            digits = "0123456789abcdefABCDEF_";
        } else if (accept(l, "oO")) {
            digits = "01234567_";
        } else if (accept(l, "bB")) {
            digits = "01_";
        }
    }
    accept_run(l, digits);
    if (accept(l, ".")) {
        accept_run(l, digits);
    }
    size_t dl = strlen(digits);
    if (dl == 11 && accept(l, "eE")) {
        accept(l, "+-");
        accept_run(l, "0123456789_");
    }
    if (dl == 23 && accept(l, "pP")) {
        accept(l, "+-");
        accept_run(l, "0123456789_");
    }
    accept(l, "i");
    if (is_alnum(lpeek(l))) {
        lnext(l);
        return false;
    }
    return true;
}

static void bad_number(lexer *l)
{
    co_buf q = CO_BUF_INIT(sizeof(l->errbuf) - 32);
    if (tpl_quote(&q, l->input + l->start, l->pos - l->start, false) < 0) {
        co_buf_init(&q, 0);
    }
    lerrorf(l, "bad number syntax: %s", co_buf_cstr(&q));
    co_buf_dispose(&q);
}

static lstate lex_number(lexer *l)
{
    if (!scan_number(l)) {
        bad_number(l);
        return S_EMITTED;
    }
    int32_t sign = lpeek(l);
    if (sign == '+' || sign == '-') {
        if (!scan_number(l) || l->input[l->pos - 1] != 'i') {
            bad_number(l);
            return S_EMITTED;
        }
        emit(l, I_COMPLEX);
        return S_EMITTED;
    }
    emit(l, I_NUMBER);
    return S_EMITTED;
}

static lstate lex_inside_action(lexer *l)
{
    bool trim;
    if (at_right_delim(l, &trim)) {
        if (l->paren_depth == 0) {
            return lex_right_delim(l);
        }
        lerrorf(l, "unclosed left paren");
        return S_EMITTED;
    }
    int32_t r = lnext(l);
    if (r == EOF_RUNE) {
        lerrorf(l, "unclosed action");
        return S_EMITTED;
    }
    if (is_space(r)) {
        lbackup(l);
        return lex_space(l);
    }
    switch (r) {
    case '=':
        emit(l, I_ASSIGN);
        return S_EMITTED;
    case ':':
        if (lnext(l) != '=') {
            lerrorf(l, "expected :=");
            return S_EMITTED;
        }
        emit(l, I_DECLARE);
        return S_EMITTED;
    case '|':
        emit(l, I_PIPE);
        return S_EMITTED;
    case '"':
        return lex_quoted(l, '"', I_STRING, "quoted string");
    case '`':
        return lex_raw_quote(l);
    case '$':
        if (at_terminator(l)) {
            emit(l, I_VARIABLE);
            return S_EMITTED;
        }
        return lex_field_or_variable(l, I_VARIABLE);
    case '\'':
        return lex_quoted(l, '\'', I_CHAR_CONSTANT, "character constant");
    case '(':
        l->paren_depth++;
        emit(l, I_LEFT_PAREN);
        return S_EMITTED;
    case ')':
        l->paren_depth--;
        if (l->paren_depth < 0) {
            lerrorf(l, "unexpected right paren");
            return S_EMITTED;
        }
        emit(l, I_RIGHT_PAREN);
        return S_EMITTED;
    default:
        break;
    }
    if (r == '.') {
        if (l->pos < l->input_len) {
            char c = l->input[l->pos];
            if (c < '0' || c > '9') {
                return lex_field_or_variable(l, I_FIELD);
            }
        }
        lbackup(l);
        return lex_number(l);
    }
    if (r == '+' || r == '-' || (r >= '0' && r <= '9')) {
        lbackup(l);
        return lex_number(l);
    }
    if (is_alnum(r)) {
        lbackup(l);
        return lex_identifier(l);
    }
    if (r < 0x80 && tpl_is_print(r)) {
        emit(l, I_CHAR);
        return S_EMITTED;
    }
    char u[32];
    fmt_rune_u(u, sizeof(u), r);
    lerrorf(l, "unrecognized character in action: %s", u);
    return S_EMITTED;
}

static item next_item(lexer *l)
{
    l->it = (item){I_EOF, l->pos, "EOF", 3, l->start_line};
    lstate s = l->inside_action ? S_INSIDE : S_TEXT;
    while (s != S_EMITTED) {
        switch (s) {
        case S_TEXT:
            s = lex_text(l);
            break;
        case S_LEFT_DELIM:
            s = lex_left_delim(l);
            break;
        case S_COMMENT:
            s = lex_comment(l);
            break;
        default:
            s = lex_inside_action(l);
            break;
        }
    }
    return l->it;
}

/* ------------------------------------------------------------------------------------------ */
/* Parser                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef struct tree_set {
    tpl_tree **items;
    size_t n;
    size_t cap;
} tree_set;

typedef struct parser {
    co_template_set *set;
    lexer *lex;
    tree_set *trees;
    tpl_tree *tree;
    const char *name; /* tree name */
    const char *parse_name;
    item token[3];
    int peek_count;
    const char **vars;
    size_t nvars;
    size_t capvars;
    int action_line;
    int range_depth;
    int stack_depth;
    int *nesting; /* shared nesting counter (bounded recursion) */
    jmp_buf *fail;
    co_buf *err;
} parser;

CO_PRINTF(2, 3) CO_NORETURN static void perrorf(parser *p, const char *fmt, ...)
{
    co_buf_reset(p->err);
    if (co_buf_printf(p->err, "template: %s:%d: ", p->parse_name, p->token[0].line) == 0) {
        va_list ap;
        va_start(ap, fmt);
        if (co_buf_vprintf(p->err, fmt, ap) < 0) {
            co_buf_init(p->err, CO_MAX_ERROR_MESSAGE);
        }
        va_end(ap);
    }
    longjmp(*p->fail, 1);
}

static void *palloc(parser *p, size_t n)
{
    void *m = tpl_arena_alloc(&p->set->arena, n);
    memset(m, 0, n);
    return m;
}

static char *pstrdup(parser *p, const char *s, size_t n)
{
    char *m = tpl_arena_alloc(&p->set->arena, n + 1);
    memcpy(m, s, n);
    m[n] = '\0';
    return m;
}

static item pnext(parser *p)
{
    if (p->peek_count > 0) {
        p->peek_count--;
    } else {
        p->token[0] = next_item(p->lex);
    }
    return p->token[p->peek_count];
}

static void pbackup(parser *p)
{
    p->peek_count++;
}

static void pbackup2(parser *p, item t1)
{
    p->token[1] = t1;
    p->peek_count = 2;
}

static void pbackup3(parser *p, item t2, item t1)
{
    p->token[1] = t1;
    p->token[2] = t2;
    p->peek_count = 3;
}

static item ppeek(parser *p)
{
    if (p->peek_count > 0) {
        return p->token[p->peek_count - 1];
    }
    p->peek_count = 1;
    p->token[0] = next_item(p->lex);
    return p->token[0];
}

static item next_non_space(parser *p)
{
    item t;
    do {
        t = pnext(p);
    } while (t.typ == I_SPACE);
    return t;
}

static item peek_non_space(parser *p)
{
    item t = next_non_space(p);
    pbackup(p);
    return t;
}

/* item.String() */
static void item_string(co_buf *b, const item *i)
{
    int rc = 0;
    if (i->typ == I_EOF) {
        rc = co_buf_puts(b, "EOF");
    } else if (i->typ == I_ERROR) {
        rc = co_buf_put(b, i->val, i->len);
    } else if (i->typ > I_KEYWORD) {
        rc = co_buf_printf(b, "<%.*s>", (int)i->len, i->val);
    } else {
        /* %.10q... for long values: the first ten runes, quoted */
        size_t n = i->len;
        size_t runes = 0;
        size_t cut = 0;
        while (cut < n && runes < 10) {
            size_t w;
            (void)co_utf8_decode_rune(i->val + cut, n - cut, &w);
            cut += w;
            runes++;
        }
        bool longer = n > 10;
        rc = tpl_quote(b, i->val, longer ? cut : n, false);
        if (rc == 0 && longer) {
            rc = co_buf_puts(b, "...");
        }
    }
    (void)rc;
}

CO_NORETURN static void unexpected(parser *p, const item *t, const char *context)
{
    co_buf s = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    item_string(&s, t);
    if (t->typ == I_ERROR) {
        char extra[512] = "";
        if (p->action_line != 0 && p->action_line != t->line) {
            snprintf(extra, sizeof(extra), " in action started at %s:%d", p->parse_name,
                     p->action_line);
            if (t->len >= 7 && memcmp(t->val + t->len - 7, " action", 7) == 0) {
                memmove(extra, extra + 10, strlen(extra + 10) + 1);
            }
        }
        char *msg = co_buf_take(&s, NULL);
        co_buf_dispose(&s);
        char local[CO_MAX_ERROR_MESSAGE / 4];
        snprintf(local, sizeof(local), "%s%s", msg, extra);
        free(msg);
        perrorf(p, "%s", local);
    }
    char *msg = co_buf_take(&s, NULL);
    co_buf_dispose(&s);
    char local[CO_MAX_ERROR_MESSAGE / 4];
    snprintf(local, sizeof(local), "%s", msg);
    free(msg);
    perrorf(p, "unexpected %s in %s", local, context);
}

static item expect(parser *p, item_type want, const char *context)
{
    item t = next_non_space(p);
    if (t.typ != want) {
        unexpected(p, &t, context);
    }
    return t;
}

static item expect_one_of(parser *p, item_type a, item_type b, const char *context)
{
    item t = next_non_space(p);
    if (t.typ != a && t.typ != b) {
        unexpected(p, &t, context);
    }
    return t;
}

static node *new_node(parser *p, node_type type, size_t pos)
{
    node *n = palloc(p, sizeof(*n));
    n->type = (uint8_t)type;
    n->pos = pos;
    n->tree = p->tree;
    return n;
}

static void list_append(parser *p, node_list *l, node *n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        node **items = palloc(p, cap * sizeof(void *));
        if (l->n) {
            memcpy(items, l->items, l->n * sizeof(void *));
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = n;
}

/* node.String() into a buffer, for error messages */
static void node_errstr(parser *p, const node *n, char *out, size_t cap)
{
    (void)p;
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    tpl_node_string(&b, n);
    snprintf(out, cap, "%s", co_buf_cstr(&b));
    co_buf_dispose(&b);
}

static void push_var(parser *p, const char *name)
{
    if (p->nvars == p->capvars) {
        size_t cap = p->capvars ? p->capvars * 2 : 8;
        const char **v = palloc(p, cap * sizeof(void *));
        if (p->nvars) {
            memcpy(v, p->vars, p->nvars * sizeof(void *));
        }
        p->vars = v;
        p->capvars = cap;
    }
    p->vars[p->nvars++] = name;
}

/* Splits "a.b.c" into identifiers. */
static void split_ident(parser *p, node *n, const char *s, size_t len)
{
    size_t parts = 1;
    for (size_t i = 0; i < len; i++) {
        parts += s[i] == '.';
    }
    n->ident = palloc(p, parts * sizeof(void *));
    size_t start = 0;
    size_t k = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            n->ident[k++] = pstrdup(p, s + start, i - start);
            start = i + 1;
        }
    }
    n->nident = parts;
}

static node *new_field(parser *p, size_t pos, const char *ident, size_t len)
{
    node *n = new_node(p, N_FIELD, pos);
    split_ident(p, n, ident + 1, len - 1); /* drop the leading '.' */
    return n;
}

static node *new_variable(parser *p, size_t pos, const char *ident, size_t len)
{
    node *n = new_node(p, N_VARIABLE, pos);
    split_ident(p, n, ident, len);
    return n;
}

/* ---- numbers and strings ------------------------------------------------------------------ */

static int digit_val(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'Z') {
        return c - 'A' + 10;
    }
    return 99;
}

/* strconv.ParseFloat(s, 64) for Go literal syntax (decimal and hex, underscores). */
static bool go_parse_float(const char *s, size_t n, double *out)
{
    char buf[512];
    size_t k = 0;
    size_t i = 0;
    if (n == 0 || n >= sizeof(buf)) {
        return false;
    }
    if (s[0] == '+' || s[0] == '-') {
        buf[k++] = s[i++];
    }
    bool hex = n - i >= 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X');
    bool digits = false;
    bool exp = false;
    bool dot = false;
    char prev = '!';
    bool prefixed = hex;
    if (hex) {
        buf[k++] = '0';
        buf[k++] = 'x';
        i += 2;
        prev = '0';
    }
    for (; i < n; i++) {
        char c = s[i];
        if (c == '_') {
            bool ok = (prev >= '0' && prev <= '9') || (hex && isxdigit((unsigned char)prev)) ||
                      (prefixed && prev == '0');
            if (!ok || exp) {
                /* underscores may appear in the exponent too, between digits */
                if (!(exp && prev >= '0' && prev <= '9')) {
                    return false;
                }
            }
            prev = '_';
            continue;
        }
        if (prev == '_' && !((c >= '0' && c <= '9') || (hex && isxdigit((unsigned char)c)))) {
            return false;
        }
        if (!exp && ((c >= '0' && c <= '9') || (hex && isxdigit((unsigned char)c)))) {
            digits = true;
        } else if (c == '.' && !dot && !exp) {
            dot = true;
        } else if (!exp && ((!hex && (c == 'e' || c == 'E')) || (hex && (c == 'p' || c == 'P')))) {
            if (!digits) {
                return false;
            }
            exp = true;
            buf[k++] = c;
            prev = c;
            if (i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-')) {
                buf[k++] = s[++i];
                prev = s[i];
            }
            if (i + 1 >= n) {
                return false;
            }
            continue;
        } else if (exp && c >= '0' && c <= '9') {
            /* exponent digit */
        } else {
            return false;
        }
        buf[k++] = c;
        prev = c;
    }
    if (!digits || prev == '_' || (hex && !exp)) {
        return false;
    }
    buf[k] = '\0';
    errno = 0;
    char *end = NULL;
    double d = strtod(buf, &end);
    if (!end || *end != '\0') {
        return false;
    }
    if (errno == ERANGE && isinf(d)) {
        return false;
    }
    *out = d;
    return true;
}

static void simplify_complex(node *n)
{
    n->is_float = n->c128[1] == 0;
    if (n->is_float) {
        n->f64 = n->c128[0];
        n->is_int = n->f64 >= -9223372036854775808.0 && n->f64 < 9223372036854775808.0 &&
                    (double)(int64_t)n->f64 == n->f64;
        if (n->is_int) {
            n->i64 = (int64_t)n->f64;
        }
        n->is_uint =
            n->f64 >= 0 && n->f64 < 18446744073709551616.0 && (double)(uint64_t)n->f64 == n->f64;
        if (n->is_uint) {
            n->u64 = (uint64_t)n->f64;
        }
    }
}

static node *new_number(parser *p, const item *t)
{
    node *n = new_node(p, N_NUMBER, t->pos);
    n->text = pstrdup(p, t->val, t->len);
    n->text_len = t->len;
    const char *s = t->val;
    size_t len = t->len;
    if (t->typ == I_CHAR_CONSTANT) {
        int32_t r = 0;
        bool multibyte;
        size_t used = tpl_unquote_char(s + 1, len - 1, '\'', &r, &multibyte);
        if (used == 0) {
            perrorf(p, "invalid syntax");
        }
        if (len - 1 - used != 1 || s[1 + used] != '\'') {
            perrorf(p, "malformed character constant: %s", n->text);
        }
        n->i64 = r;
        n->is_int = true;
        n->u64 = (uint64_t)r;
        n->is_uint = true;
        n->f64 = (double)r;
        n->is_float = true;
        return n;
    }
    if (t->typ == I_COMPLEX) {
        /* "re+imi" / "re-imi" */
        size_t split = 0;
        for (size_t i = len - 1; i > 0; i--) {
            if ((s[i] == '+' || s[i] == '-') && s[i - 1] != 'e' && s[i - 1] != 'E' &&
                s[i - 1] != 'p' && s[i - 1] != 'P') {
                split = i;
                break;
            }
        }
        double re;
        double im;
        if (split == 0 || !go_parse_float(s, split, &re) ||
            !go_parse_float(s + split, len - split - 1, &im)) {
            perrorf(p, "expected integer");
        }
        n->is_complex = true;
        n->c128[0] = re;
        n->c128[1] = im;
        simplify_complex(n);
        return n;
    }
    if (len > 0 && s[len - 1] == 'i') {
        double f;
        if (go_parse_float(s, len - 1, &f)) {
            n->is_complex = true;
            n->c128[0] = 0;
            n->c128[1] = f;
            simplify_complex(n);
            return n;
        }
    }
    uint64_t u = 0;
    bool uok = false;
    if (len > 0 && s[0] != '-' && s[0] != '+') {
        uok = co_strconv_parse_uint(&u, s, len, 0, 0) == 0;
    } else if (len > 0 && s[0] == '+') {
        uok = co_strconv_parse_uint(&u, s + 1, len - 1, 0, 0) == 0;
    }
    if (uok) {
        n->is_uint = true;
        n->u64 = u;
    }
    int64_t i;
    if (co_strconv_parse_int(&i, s, len, 0, 0) == 0) {
        n->is_int = true;
        n->i64 = i;
        if (i == 0) {
            n->is_uint = true;
            n->u64 = u;
        }
    }
    if (n->is_int) {
        n->is_float = true;
        n->f64 = (double)n->i64;
    } else if (n->is_uint) {
        n->is_float = true;
        n->f64 = (double)n->u64;
    } else {
        double f;
        if (go_parse_float(s, len, &f)) {
            if (!memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len) &&
                !memchr(s, 'p', len) && !memchr(s, 'P', len)) {
                co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
                tpl_ignore(tpl_quote(&q, s, len, false));
                char local[1024];
                snprintf(local, sizeof(local), "%s", co_buf_cstr(&q));
                co_buf_dispose(&q);
                perrorf(p, "integer overflow: %s", local);
            }
            n->is_float = true;
            n->f64 = f;
            if (f >= -9223372036854775808.0 && f < 9223372036854775808.0 &&
                (double)(int64_t)f == f) {
                n->is_int = true;
                n->i64 = (int64_t)f;
            }
            if (f >= 0 && f < 18446744073709551616.0 && (double)(uint64_t)f == f) {
                n->is_uint = true;
                n->u64 = (uint64_t)f;
            }
        }
    }
    if (!n->is_int && !n->is_uint && !n->is_float) {
        co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        (void)tpl_quote(&q, s, len, false);
        char local[1024];
        snprintf(local, sizeof(local), "%s", co_buf_cstr(&q));
        co_buf_dispose(&q);
        perrorf(p, "illegal number syntax: %s", local);
    }
    return n;
}

static node *new_string(parser *p, const item *t)
{
    co_buf u = CO_BUF_INIT(CO_MAX_TEMPLATE_SOURCE);
    if (!tpl_unquote(&u, t->val, t->len)) {
        co_buf_dispose(&u);
        perrorf(p, "invalid syntax");
    }
    node *n = new_node(p, N_STRING, t->pos);
    n->quoted = pstrdup(p, t->val, t->len);
    /* keep the unquoted text in the arena as a ready-made string value */
    tv_str *s = tpl_arena_alloc(&p->set->arena, sizeof(*s) + u.len + 1);
    s->len = u.len;
    memcpy(s->s, co_buf_cstr(&u), u.len + 1);
    co_buf_dispose(&u);
    n->text = s->s;
    n->text_len = s->len;
    n->literal.t = &T_STRING;
    n->literal.u.s = s;
    return n;
}

/* ---- grammar ------------------------------------------------------------------------------ */

static node *pipeline(parser *p, const char *context, item_type end);
static node *item_list(parser *p, node **next);
static node *if_control(parser *p);
static node *with_control(parser *p);
static void tree_add(parser *p);

static void nest_enter(parser *p, const char *what)
{
    if (++*p->nesting > CO_MAX_TEMPLATE_NESTING) {
        perrorf(p, "%s", what);
    }
}

static node *term(parser *p)
{
    item t = next_non_space(p);
    switch (t.typ) {
    case I_IDENTIFIER: {
        if (!tpl_funcs_lookup(p->set->funcs, t.val, t.len)) {
            perrorf(p, "function \"%.*s\" not defined", (int)t.len, t.val);
        }
        node *n = new_node(p, N_IDENTIFIER, t.pos);
        n->text = pstrdup(p, t.val, t.len);
        n->text_len = t.len;
        return n;
    }
    case I_DOT:
        return new_node(p, N_DOT, t.pos);
    case I_NIL:
        return new_node(p, N_NIL, t.pos);
    case I_VARIABLE: {
        node *v = new_variable(p, t.pos, t.val, t.len);
        for (size_t i = 0; i < p->nvars; i++) {
            if (strcmp(p->vars[i], v->ident[0]) == 0) {
                return v;
            }
        }
        perrorf(p, "undefined variable \"%s\"", v->ident[0]);
    }
    /* fallthrough: perrorf does not return */
    case I_FIELD:
        return new_field(p, t.pos, t.val, t.len);
    case I_BOOL: {
        node *n = new_node(p, N_BOOL, t.pos);
        n->truth = t.len == 4;
        return n;
    }
    case I_CHAR_CONSTANT:
    case I_COMPLEX:
    case I_NUMBER:
        return new_number(p, &t);
    case I_LEFT_PAREN: {
        if (p->stack_depth >= CO_MAX_TEMPLATE_NESTING) {
            perrorf(p, "max expression depth exceeded");
        }
        p->stack_depth++;
        nest_enter(p, "max expression depth exceeded");
        node *n = pipeline(p, "parenthesized pipeline", I_RIGHT_PAREN);
        --*p->nesting;
        p->stack_depth--;
        return n;
    }
    case I_STRING:
    case I_RAW_STRING:
        return new_string(p, &t);
    default:
        pbackup(p);
        return NULL;
    }
}

static node *operand(parser *p)
{
    node *n = term(p);
    if (!n) {
        return NULL;
    }
    if (ppeek(p).typ == I_FIELD) {
        node *chain = new_node(p, N_CHAIN, ppeek(p).pos);
        chain->pipe = n;
        const char *fields[64] = {NULL};
        size_t nf = 0;
        size_t cap = 64;
        const char **fs = fields;
        while (ppeek(p).typ == I_FIELD) {
            item f = pnext(p);
            if (nf == cap) {
                const char **bigger = palloc(p, cap * 2 * sizeof(void *));
                memcpy(bigger, fs, nf * sizeof(void *));
                fs = bigger;
                cap *= 2;
            }
            fs[nf++] = pstrdup(p, f.val + 1, f.len - 1);
        }
        chain->ident = palloc(p, nf * sizeof(void *));
        memcpy(chain->ident, fs, nf * sizeof(void *));
        chain->nident = nf;
        switch (n->type) {
        case N_FIELD:
        case N_VARIABLE: {
            node *m = new_node(p, (node_type)n->type, chain->pos);
            m->ident = palloc(p, (n->nident + nf) * sizeof(void *));
            memcpy(m->ident, n->ident, n->nident * sizeof(void *));
            memcpy(m->ident + n->nident, fs, nf * sizeof(void *));
            m->nident = n->nident + nf;
            return m;
        }
        case N_BOOL:
        case N_STRING:
        case N_NUMBER:
        case N_NIL:
        case N_DOT: {
            char s[512];
            node_errstr(p, n, s, sizeof(s));
            co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
            (void)tpl_quote(&q, s, strlen(s), false);
            char local[1024];
            snprintf(local, sizeof(local), "%s", co_buf_cstr(&q));
            co_buf_dispose(&q);
            perrorf(p, "unexpected . after term %s", local);
        }
        /* fallthrough: perrorf does not return */
        default:
            return chain;
        }
    }
    return n;
}

static node *command(parser *p)
{
    node *cmd = new_node(p, N_COMMAND, peek_non_space(p).pos);
    for (;;) {
        (void)peek_non_space(p);
        node *o = operand(p);
        if (o) {
            list_append(p, &cmd->list, o);
        }
        item t = pnext(p);
        if (t.typ == I_SPACE) {
            continue;
        }
        if (t.typ == I_RIGHT_DELIM || t.typ == I_RIGHT_PAREN) {
            pbackup(p);
        } else if (t.typ != I_PIPE) {
            unexpected(p, &t, "operand");
        }
        break;
    }
    if (cmd->list.n == 0) {
        perrorf(p, "empty command");
    }
    return cmd;
}

static void check_pipeline(parser *p, node *pipe, const char *context)
{
    if (pipe->list.n == 0) {
        perrorf(p, "missing value for %s", context);
    }
    for (size_t i = 1; i < pipe->list.n; i++) {
        switch (pipe->list.items[i]->list.items[0]->type) {
        case N_BOOL:
        case N_DOT:
        case N_NIL:
        case N_NUMBER:
        case N_STRING:
            perrorf(p, "non executable command in pipeline stage %zu", i + 1);
        default:
            break;
        }
    }
}

static node *pipeline(parser *p, const char *context, item_type end)
{
    item t = peek_non_space(p);
    node *pipe = new_node(p, N_PIPE, t.pos);
    pipe->line = t.line;
decls:;
    item v = peek_non_space(p);
    if (v.typ == I_VARIABLE) {
        pnext(p);
        item after = ppeek(p);
        item nx = peek_non_space(p);
        if (nx.typ == I_ASSIGN || nx.typ == I_DECLARE) {
            pipe->is_assign = nx.typ == I_ASSIGN;
            next_non_space(p);
            list_append(p, &pipe->decl, new_variable(p, v.pos, v.val, v.len));
            push_var(p, pstrdup(p, v.val, v.len));
        } else if (nx.typ == I_CHAR && nx.len == 1 && nx.val[0] == ',') {
            next_non_space(p);
            list_append(p, &pipe->decl, new_variable(p, v.pos, v.val, v.len));
            push_var(p, pstrdup(p, v.val, v.len));
            if (strcmp(context, "range") == 0 && pipe->decl.n < 2) {
                item_type k = peek_non_space(p).typ;
                if (k == I_VARIABLE || k == I_RIGHT_DELIM || k == I_RIGHT_PAREN) {
                    goto decls;
                }
                perrorf(p, "range can only initialize variables");
            }
            perrorf(p, "too many declarations in %s", context);
        } else if (after.typ == I_SPACE) {
            pbackup3(p, v, after);
        } else {
            pbackup2(p, v);
        }
    }
    for (;;) {
        item tok = next_non_space(p);
        if (tok.typ == end) {
            check_pipeline(p, pipe, context);
            return pipe;
        }
        switch (tok.typ) {
        case I_BOOL:
        case I_CHAR_CONSTANT:
        case I_COMPLEX:
        case I_DOT:
        case I_FIELD:
        case I_IDENTIFIER:
        case I_NUMBER:
        case I_NIL:
        case I_RAW_STRING:
        case I_STRING:
        case I_VARIABLE:
        case I_LEFT_PAREN:
            pbackup(p);
            list_append(p, &pipe->list, command(p));
            break;
        default:
            unexpected(p, &tok, context);
        }
    }
}

static node *parse_control(parser *p, node_type type, const char *context)
{
    size_t saved_vars = p->nvars;
    nest_enter(p, "max nesting depth exceeded");
    node *pipe = pipeline(p, context, I_RIGHT_DELIM);
    if (type == N_RANGE) {
        p->range_depth++;
    }
    node *next = NULL;
    node *list = item_list(p, &next);
    if (type == N_RANGE) {
        p->range_depth--;
    }
    node *else_list = NULL;
    if (next->type == N_ELSE) {
        if (type == N_IF && ppeek(p).typ == I_IF) {
            pnext(p);
            else_list = new_node(p, N_LIST, next->pos);
            list_append(p, &else_list->list, if_control(p));
        } else if (type == N_WITH && ppeek(p).typ == I_WITH) {
            pnext(p);
            else_list = new_node(p, N_LIST, next->pos);
            list_append(p, &else_list->list, with_control(p));
        } else {
            else_list = item_list(p, &next);
            if (next->type != N_END) {
                char s[512];
                node_errstr(p, next, s, sizeof(s));
                perrorf(p, "expected end; found %s", s);
            }
        }
    }
    --*p->nesting;
    p->nvars = saved_vars;
    node *n = new_node(p, type, pipe->pos);
    n->line = pipe->line;
    n->pipe = pipe;
    n->body = list;
    n->else_body = else_list;
    return n;
}

static node *if_control(parser *p)
{
    return parse_control(p, N_IF, "if");
}

static node *with_control(parser *p)
{
    return parse_control(p, N_WITH, "with");
}

static const char *parse_template_name(parser *p, const item *t, const char *context)
{
    if (t->typ == I_STRING || t->typ == I_RAW_STRING) {
        co_buf u = CO_BUF_INIT(CO_MAX_TEMPLATE_SOURCE);
        if (!tpl_unquote(&u, t->val, t->len)) {
            co_buf_dispose(&u);
            perrorf(p, "invalid syntax");
        }
        char *name = pstrdup(p, co_buf_cstr(&u), u.len);
        co_buf_dispose(&u);
        return name;
    }
    unexpected(p, t, context);
    return NULL;
}

static node *new_template(parser *p, const item *t, const char *name, node *pipe)
{
    node *n = new_node(p, N_TEMPLATE, t->pos);
    n->line = t->line;
    n->text = name;
    n->text_len = strlen(name);
    n->pipe = pipe;
    return n;
}

/* Runs a sub-tree parse (define, block) sharing the lexer. */
static void sub_parser(parser *sub, parser *p, const char *name)
{
    memset(sub, 0, sizeof(*sub));
    sub->set = p->set;
    sub->lex = p->lex;
    sub->trees = p->trees;
    sub->parse_name = p->parse_name;
    sub->nesting = p->nesting;
    sub->fail = p->fail;
    sub->err = p->err;
    sub->name = name;
    sub->tree = palloc(p, sizeof(*sub->tree));
    sub->tree->name = name;
    sub->tree->parse_name = p->parse_name;
    sub->tree->text = p->tree->text;
    sub->tree->text_len = p->tree->text_len;
    push_var(sub, "$");
}

static node *block_control(parser *p)
{
    const char *context = "block clause";
    item t = next_non_space(p);
    const char *name = parse_template_name(p, &t, context);
    node *pipe = pipeline(p, context, I_RIGHT_DELIM);
    parser block;
    sub_parser(&block, p, name);
    nest_enter(p, "max nesting depth exceeded");
    node *end = NULL;
    block.tree->root = item_list(&block, &end);
    --*p->nesting;
    if (end->type != N_END) {
        char s[512];
        node_errstr(p, end, s, sizeof(s));
        perrorf(p, "unexpected %s in %s", s, context);
    }
    tree_add(&block);
    return new_template(p, &t, name, pipe);
}

static node *template_control(parser *p)
{
    const char *context = "template clause";
    item t = next_non_space(p);
    const char *name = parse_template_name(p, &t, context);
    node *pipe = NULL;
    if (next_non_space(p).typ != I_RIGHT_DELIM) {
        pbackup(p);
        pipe = pipeline(p, context, I_RIGHT_DELIM);
    }
    return new_template(p, &t, name, pipe);
}

static node *action(parser *p)
{
    item t = next_non_space(p);
    switch (t.typ) {
    case I_BLOCK:
        return block_control(p);
    case I_BREAK:
    case I_CONTINUE: {
        const char *what = t.typ == I_BREAK ? "{{break}}" : "{{continue}}";
        item r = next_non_space(p);
        if (r.typ != I_RIGHT_DELIM) {
            unexpected(p, &r, what);
        }
        if (p->range_depth == 0) {
            perrorf(p, "%s outside {{range}}", what);
        }
        node *n = new_node(p, t.typ == I_BREAK ? N_BREAK : N_CONTINUE, t.pos);
        n->line = t.line;
        return n;
    }
    case I_ELSE: {
        item pk = peek_non_space(p);
        if (pk.typ == I_IF || pk.typ == I_WITH) {
            node *n = new_node(p, N_ELSE, pk.pos);
            n->line = pk.line;
            return n;
        }
        item r = expect(p, I_RIGHT_DELIM, "else");
        node *n = new_node(p, N_ELSE, r.pos);
        n->line = r.line;
        return n;
    }
    case I_END:
        return new_node(p, N_END, expect(p, I_RIGHT_DELIM, "end").pos);
    case I_IF:
        return if_control(p);
    case I_RANGE:
        return parse_control(p, N_RANGE, "range");
    case I_TEMPLATE:
        return template_control(p);
    case I_WITH:
        return with_control(p);
    default:
        break;
    }
    pbackup(p);
    item tok = ppeek(p);
    node *n = new_node(p, N_ACTION, tok.pos);
    n->line = tok.line;
    n->pipe = pipeline(p, "command", I_RIGHT_DELIM);
    return n;
}

static node *text_or_action(parser *p)
{
    item t = next_non_space(p);
    switch (t.typ) {
    case I_TEXT: {
        node *n = new_node(p, N_TEXT, t.pos);
        n->text = pstrdup(p, t.val, t.len);
        n->text_len = t.len;
        return n;
    }
    case I_LEFT_DELIM: {
        p->action_line = t.line;
        node *n = action(p);
        p->action_line = 0;
        return n;
    }
    case I_COMMENT: {
        node *n = new_node(p, N_COMMENT, t.pos);
        n->text = pstrdup(p, t.val, t.len);
        n->text_len = t.len;
        return n;
    }
    default:
        unexpected(p, &t, "input");
    }
    return NULL;
}

static node *item_list(parser *p, node **next)
{
    node *list = new_node(p, N_LIST, peek_non_space(p).pos);
    while (peek_non_space(p).typ != I_EOF) {
        node *n = text_or_action(p);
        if (n->type == N_END || n->type == N_ELSE) {
            *next = n;
            return list;
        }
        list_append(p, &list->list, n);
    }
    perrorf(p, "unexpected EOF");
    return NULL;
}

static bool is_space_rune_bytes(const char *s, size_t n)
{
    /* bytes.TrimSpace: Unicode white space */
    size_t i = 0;
    while (i < n) {
        size_t w;
        int32_t r = co_utf8_decode_rune(s + i, n - i, &w);
        if (!tpl_is_space(r) || (r == 0xFFFD && w == 1)) {
            return false;
        }
        i += w;
    }
    return true;
}

static bool is_empty_tree(const node *n)
{
    if (!n) {
        return true;
    }
    switch (n->type) {
    case N_COMMENT:
        return true;
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++) {
            if (!is_empty_tree(n->list.items[i])) {
                return false;
            }
        }
        return true;
    case N_TEXT:
        return is_space_rune_bytes(n->text, n->text_len);
    default:
        return false;
    }
}

static tpl_tree *tree_set_get(tree_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->items[i]->name, name) == 0) {
            return s->items[i];
        }
    }
    return NULL;
}

static void tree_add(parser *p)
{
    tpl_tree *old = tree_set_get(p->trees, p->tree->name);
    if (!old || is_empty_tree(old->root)) {
        if (old) {
            for (size_t i = 0; i < p->trees->n; i++) {
                if (p->trees->items[i] == old) {
                    p->trees->items[i] = p->tree;
                }
            }
            return;
        }
        if (p->trees->n == p->trees->cap) {
            size_t cap = p->trees->cap ? p->trees->cap * 2 : 8;
            p->trees->items = co_xreallocarray(p->trees->items, cap, sizeof(void *));
            p->trees->cap = cap;
        }
        p->trees->items[p->trees->n++] = p->tree;
        return;
    }
    if (!is_empty_tree(p->tree->root)) {
        co_buf q = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        (void)tpl_quote(&q, p->tree->name, strlen(p->tree->name), false);
        char local[1024];
        snprintf(local, sizeof(local), "%s", co_buf_cstr(&q));
        co_buf_dispose(&q);
        perrorf(p, "template: multiple definition of template %s", local);
    }
}

static void parse_definition(parser *p)
{
    const char *context = "define clause";
    item name = expect_one_of(p, I_STRING, I_RAW_STRING, context);
    co_buf u = CO_BUF_INIT(CO_MAX_TEMPLATE_SOURCE);
    if (!tpl_unquote(&u, name.val, name.len)) {
        co_buf_dispose(&u);
        perrorf(p, "invalid syntax");
    }
    p->name = pstrdup(p, co_buf_cstr(&u), u.len);
    p->tree->name = p->name;
    co_buf_dispose(&u);
    expect(p, I_RIGHT_DELIM, context);
    node *end = NULL;
    p->tree->root = item_list(p, &end);
    if (end->type != N_END) {
        char s[512];
        node_errstr(p, end, s, sizeof(s));
        perrorf(p, "unexpected %s in %s", s, context);
    }
    tree_add(p);
}

static void parse_top(parser *p)
{
    p->tree->root = new_node(p, N_LIST, ppeek(p).pos);
    while (ppeek(p).typ != I_EOF) {
        if (ppeek(p).typ == I_LEFT_DELIM) {
            item delim = pnext(p);
            if (next_non_space(p).typ == I_DEFINE) {
                parser def;
                sub_parser(&def, p, "definition");
                parse_definition(&def);
                continue;
            }
            pbackup2(p, delim);
        }
        node *n = text_or_action(p);
        if (n->type == N_END || n->type == N_ELSE) {
            char s[512];
            node_errstr(p, n, s, sizeof(s));
            perrorf(p, "unexpected %s", s);
        }
        list_append(p, &p->tree->root->list, n);
    }
}

static int tree_cmp(const void *a, const void *b)
{
    return strcmp((*(tpl_tree *const *)a)->name, (*(tpl_tree *const *)b)->name);
}

/* text/template's associate: install each new tree unless it is empty and a tree of that
 * name already exists. */
static void install(co_template_set *set, tpl_tree *t)
{
    for (size_t i = 0; i < set->ntrees; i++) {
        if (strcmp(set->trees[i]->name, t->name) == 0) {
            if (is_empty_tree(t->root) && set->trees[i]->root) {
                return;
            }
            set->trees[i] = t;
            return;
        }
    }
    if (set->ntrees == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 16;
        set->trees = co_xreallocarray(set->trees, set->cap, sizeof(void *));
    }
    set->trees[set->ntrees++] = t;
}

int tpl_parse(co_template_set *set, const char *name, const char *text, size_t len)
{
    if (len > CO_MAX_TEMPLATE_SOURCE) {
        return co_error_set(CO_ETOOBIG,
                            "template: %s: source of %zu bytes exceeds the limit of %zu", name, len,
                            (size_t)CO_MAX_TEMPLATE_SOURCE);
    }
    char *src = tpl_arena_alloc(&set->arena, len + 1);
    memcpy(src, text, len);
    src[len] = '\0';
    size_t nlen = strlen(name);
    char *pname = tpl_arena_alloc(&set->arena, nlen + 1);
    memcpy(pname, name, nlen + 1);

    lexer lex;
    memset(&lex, 0, sizeof(lex));
    lex.input = src;
    lex.input_len = len;
    const char *ld = set->opts.left_delim && *set->opts.left_delim ? set->opts.left_delim : "{{";
    const char *rd = set->opts.right_delim && *set->opts.right_delim ? set->opts.right_delim : "}}";
    lex.left = ld;
    lex.left_len = strlen(ld);
    lex.right = rd;
    lex.right_len = strlen(rd);
    lex.line = 1;
    lex.start_line = 1;

    tree_set trees = {NULL, 0, 0};
    co_buf err = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    jmp_buf fail;
    int nesting = 0;
    parser p;
    memset(&p, 0, sizeof(p));
    p.set = set;
    p.lex = &lex;
    p.trees = &trees;
    p.parse_name = pname;
    p.name = pname;
    p.nesting = &nesting;
    p.fail = &fail;
    p.err = &err;
    p.tree = palloc(&p, sizeof(*p.tree));
    p.tree->name = pname;
    p.tree->parse_name = pname;
    p.tree->text = src;
    p.tree->text_len = len;
    push_var(&p, "$");

    int rc = 0;
    if (setjmp(fail) == 0) {
        parse_top(&p);
        tree_add(&p);
        for (size_t i = 0; i < trees.n; i++) {
            install(set, trees.items[i]);
        }
        qsort(set->trees, set->ntrees, sizeof(void *), tree_cmp);
    } else {
        rc = co_error_set(CO_EINVALID, "%s", co_buf_cstr(&err));
    }
    co_buf_dispose(&err);
    free(trees.items);
    return rc;
}

const tpl_tree *tpl_set_lookup(const co_template_set *set, const char *name, size_t len)
{
    size_t lo = 0;
    size_t hi = set->ntrees;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *k = set->trees[mid]->name;
        size_t kl = strlen(k);
        size_t m = kl < len ? kl : len;
        int c = memcmp(k, name, m);
        if (c == 0) {
            c = kl < len ? -1 : kl > len ? 1 : 0;
        }
        if (c == 0) {
            return set->trees[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* strconv.Unquote                                                                            */
/* ------------------------------------------------------------------------------------------ */

static int hexval(char c)
{
    int d = digit_val(c);
    return d < 16 ? d : -1;
}

size_t tpl_unquote_char(const char *s, size_t len, char quote, int32_t *r, bool *multibyte)
{
    if (len == 0) {
        return 0;
    }
    unsigned char c = (unsigned char)s[0];
    if (c == (unsigned char)quote && (quote == '\'' || quote == '"')) {
        return 0;
    }
    if (c >= 0x80) {
        size_t w;
        *r = co_utf8_decode_rune(s, len, &w);
        *multibyte = true;
        return w;
    }
    *multibyte = false;
    if (c != '\\') {
        *r = c;
        return 1;
    }
    if (len <= 1) {
        return 0;
    }
    char e = s[1];
    switch (e) {
    case 'a':
        *r = 7;
        return 2;
    case 'b':
        *r = 8;
        return 2;
    case 'f':
        *r = 12;
        return 2;
    case 'n':
        *r = 10;
        return 2;
    case 'r':
        *r = 13;
        return 2;
    case 't':
        *r = 9;
        return 2;
    case 'v':
        *r = 11;
        return 2;
    case 'x':
    case 'u':
    case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (len - 2 < n) {
            return 0;
        }
        uint32_t v = 0;
        for (size_t i = 0; i < n; i++) {
            int d = hexval(s[2 + i]);
            if (d < 0) {
                return 0;
            }
            v = v << 4 | (uint32_t)d;
        }
        if (e == 'x') {
            *r = (int32_t)v;
            return 2 + n;
        }
        if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
            return 0;
        }
        *r = (int32_t)v;
        *multibyte = true;
        return 2 + n;
    }
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7': {
        if (len < 4) {
            return 0;
        }
        uint32_t v = (uint32_t)(e - '0');
        for (size_t i = 2; i < 4; i++) {
            if (s[i] < '0' || s[i] > '7') {
                return 0;
            }
            v = v * 8 + (uint32_t)(s[i] - '0');
        }
        if (v > 255) {
            return 0;
        }
        *r = (int32_t)v;
        return 4;
    }
    case '\\':
        *r = '\\';
        return 2;
    case '\'':
    case '"':
        if (e != quote) {
            return 0;
        }
        *r = (unsigned char)e;
        return 2;
    default:
        return 0;
    }
}

static bool put_ok(co_buf *b, const void *s, size_t n)
{
    return co_buf_put(b, s, n) == 0;
}

bool tpl_unquote(co_buf *out, const char *in, size_t n)
{
    co_buf_reset(out);
    if (n < 2) {
        return false;
    }
    char quote = in[0];
    const char *endq = memchr(in + 1, quote, n - 1);
    if (!endq) {
        return false;
    }
    size_t end = (size_t)(endq - in) + 1;
    if (quote == '`') {
        if (end != n) {
            return false;
        }
        for (size_t i = 1; i + 1 < end; i++) {
            if (in[i] != '\r' && !put_ok(out, in + i, 1)) {
                return false;
            }
        }
        return true;
    }
    if (quote != '"' && quote != '\'') {
        return false;
    }
    if (!memchr(in, '\\', end) && !memchr(in, '\n', end)) {
        bool valid;
        if (quote == '"') {
            valid = co_utf8_valid(in + 1, end - 2);
        } else {
            size_t w;
            int32_t r = co_utf8_decode_rune(in + 1, end - 2, &w);
            valid = 1 + w + 1 == end && (r != 0xFFFD || w != 1);
        }
        if (valid) {
            return end == n && put_ok(out, in + 1, end - 2);
        }
    }
    size_t i = 1;
    while (i < n && in[i] != quote) {
        int32_t r;
        bool mb;
        if (in[i] == '\n') {
            return false;
        }
        size_t used = tpl_unquote_char(in + i, n - i, quote, &r, &mb);
        if (used == 0) {
            return false;
        }
        i += used;
        if (r < 0x80 || !mb) {
            char c = (char)r;
            if (!put_ok(out, &c, 1)) {
                return false;
            }
        } else {
            char enc[4];
            size_t w = co_utf8_encode(enc, r);
            if (!put_ok(out, enc, w)) {
                return false;
            }
        }
        if (quote == '\'') {
            break;
        }
    }
    if (!(i < n && in[i] == quote)) {
        return false;
    }
    return i + 1 == n;
}

/* ------------------------------------------------------------------------------------------ */
/* Node.String()                                                                              */
/* ------------------------------------------------------------------------------------------ */

static void put(co_buf *b, const char *s, size_t n)
{
    if (co_buf_put(b, s, n) < 0) {
        co_buf_init(b, CO_MAX_ERROR_MESSAGE);
    }
}

static void puts_(co_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void idents(co_buf *b, const node *n, size_t from)
{
    for (size_t i = from; i < n->nident; i++) {
        if (i > 0 || n->type == N_FIELD || n->type == N_CHAIN) {
            puts_(b, ".");
        }
        puts_(b, n->ident[i]);
    }
}

void tpl_node_string(co_buf *b, const node *n)
{
    switch (n->type) {
    case N_TEXT:
        put(b, n->text, n->text_len);
        break;
    case N_COMMENT:
        puts_(b, "{{");
        put(b, n->text, n->text_len);
        puts_(b, "}}");
        break;
    case N_ACTION:
        puts_(b, "{{");
        tpl_node_string(b, n->pipe);
        puts_(b, "}}");
        break;
    case N_BOOL:
        puts_(b, n->truth ? "true" : "false");
        break;
    case N_CHAIN:
        if (n->pipe->type == N_PIPE) {
            puts_(b, "(");
            tpl_node_string(b, n->pipe);
            puts_(b, ")");
        } else {
            tpl_node_string(b, n->pipe);
        }
        idents(b, n, 0);
        break;
    case N_COMMAND:
        for (size_t i = 0; i < n->list.n; i++) {
            if (i > 0) {
                puts_(b, " ");
            }
            const node *a = n->list.items[i];
            if (a->type == N_PIPE) {
                puts_(b, "(");
                tpl_node_string(b, a);
                puts_(b, ")");
            } else {
                tpl_node_string(b, a);
            }
        }
        break;
    case N_DOT:
        puts_(b, ".");
        break;
    case N_ELSE:
        puts_(b, "{{else}}");
        break;
    case N_END:
        puts_(b, "{{end}}");
        break;
    case N_FIELD:
        idents(b, n, 0);
        break;
    case N_IDENTIFIER:
        put(b, n->text, n->text_len);
        break;
    case N_IF:
    case N_RANGE:
    case N_WITH:
        puts_(b, n->type == N_IF ? "{{if " : n->type == N_RANGE ? "{{range " : "{{with ");
        tpl_node_string(b, n->pipe);
        puts_(b, "}}");
        tpl_node_string(b, n->body);
        if (n->else_body) {
            puts_(b, "{{else}}");
            tpl_node_string(b, n->else_body);
        }
        puts_(b, "{{end}}");
        break;
    case N_LIST:
        for (size_t i = 0; i < n->list.n; i++) {
            tpl_node_string(b, n->list.items[i]);
        }
        break;
    case N_NIL:
        puts_(b, "nil");
        break;
    case N_NUMBER:
        put(b, n->text, n->text_len);
        break;
    case N_PIPE:
        for (size_t i = 0; i < n->decl.n; i++) {
            if (i > 0) {
                puts_(b, ", ");
            }
            tpl_node_string(b, n->decl.items[i]);
        }
        if (n->decl.n > 0) {
            puts_(b, " := ");
        }
        for (size_t i = 0; i < n->list.n; i++) {
            if (i > 0) {
                puts_(b, " | ");
            }
            tpl_node_string(b, n->list.items[i]);
        }
        break;
    case N_STRING:
        puts_(b, n->quoted);
        break;
    case N_TEMPLATE:
        puts_(b, "{{template ");
        if (tpl_quote(b, n->text, n->text_len, false) < 0) {
            co_buf_init(b, CO_MAX_ERROR_MESSAGE);
        }
        if (n->pipe) {
            puts_(b, " ");
            tpl_node_string(b, n->pipe);
        }
        puts_(b, "}}");
        break;
    case N_VARIABLE:
        puts_(b, n->ident[0]);
        idents(b, n, 1);
        break;
    case N_BREAK:
        puts_(b, "{{break}}");
        break;
    case N_CONTINUE:
        puts_(b, "{{continue}}");
        break;
    default:
        break;
    }
}
