/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sprig's date functions and the time.Time value they pass around: Go's layout-based
 * formatting and parsing (the reference time "Mon Jan 2 15:04:05 MST 2006"), locations read
 * from the system's tzdata (TZif files under /usr/share/zoneinfo, $ZONEINFO first), the Local
 * location chosen from $TZ the way Go chooses it, and time.Duration printing.
 *
 * A time value is a struct value of type time.Time whose payload is a tv_time: the instant,
 * its location (NULL for UTC) and the zone in effect there, resolved once when the value is
 * made. It prints with String() as Go does ("2006-01-02 15:04:05.999999999 -0700 MST", with
 * " m=+0.000123456" for a reading of now()), encodes to JSON as RFC 3339 with nanoseconds,
 * and offers the common read-only methods (Format, Unix, Year, Month, ...).
 *
 * sprig's own rules are kept even where they surprise: an unknown zone name silently means
 * UTC, a date argument of another type (a float64 from JSON among them) means now, and
 * toDate returns the zero time on a parse error. After the last transition a zone file lists
 * (2037 in Debian's "fat" files) the file's POSIX TZ rule decides, as in Go.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/utf8.h"
#include "co/util/strconv.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/time.h"
#include "sprig.h"

#define OUT_INIT CO_BUF_INIT(tpl_out_cap())

/* The largest zone file we read (the biggest in tzdata are a few KiB). */
#define MAX_ZONE_FILE ((size_t)256 * 1024)

#define SECS_PER_DAY 86400LL
/* Unix time of Go's zero Time, January 1 of year 1, UTC. */
#define ZERO_UNIX (-62135596800LL)

/* ---- locations ---------------------------------------------------------------------------- */

typedef struct zone_type {
    int32_t off;
    bool dst;
    const char *abbr;
} zone_type;

/* A location: a list of zone types and the transitions between them. UTC is NULL; a fixed
 * zone has one type and no transition. */
struct tpl_zone {
    const zone_type *types;
    size_t ntypes;
    const int64_t *when;
    const uint8_t *idx;
    size_t ntx;
    const char *extend; /* the POSIX TZ rule for times after the last transition, or NULL */
    bool local;         /* time.Local (one location in Go, however often we load it) */
    bool fixed;         /* a zone made for a parsed offset or abbreviation (FixedZone) */
};

typedef struct zone_at {
    const char *abbr;
    int32_t off;
    int64_t start; /* the zone holds for start <= t < end */
    int64_t end;
} zone_at;

/* ---- POSIX TZ rules (the footer of a version 2+ zone file), as Go's tzset reads them ---- */

enum { RULE_JULIAN, RULE_DOY, RULE_MONTH_WEEK_DAY };

typedef struct tz_rule {
    int kind;
    int day, week, mon;
    int time; /* seconds after local midnight */
} tz_rule;

static bool tz_num(const char **s, int min, int max, int *out)
{
    const char *p = *s;
    int num = 0;
    if (!*p) {
        return false;
    }
    for (; *p; p++) {
        if (*p < '0' || *p > '9') {
            if (p == *s || num < min) {
                return false;
            }
            break;
        }
        num = num * 10 + (*p - '0');
        if (num > max) {
            return false;
        }
    }
    if (num < min) {
        return false;
    }
    *out = num;
    *s = p;
    return true;
}

/* A zone abbreviation: three or more characters up to a digit, sign or comma, or <...>. */
static bool tz_name(const char **s, const char **name, size_t *len)
{
    const char *p = *s;
    if (!*p) {
        return false;
    }
    if (*p == '<') {
        const char *close = strchr(p, '>');
        if (!close) {
            return false;
        }
        *name = p + 1;
        *len = (size_t)(close - p - 1);
        *s = close + 1;
        return true;
    }
    size_t i = 0;
    while (p[i] && !(p[i] >= '0' && p[i] <= '9') && p[i] != ',' && p[i] != '-' && p[i] != '+') {
        i++;
    }
    if (i < 3) {
        return false;
    }
    *name = p;
    *len = i;
    *s = p + i;
    return true;
}

static bool tz_offset(const char **s, int *out)
{
    const char *p = *s;
    bool neg = false;
    if (!*p) {
        return false;
    }
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    int h, m = 0, sec = 0;
    if (!tz_num(&p, 0, 24 * 7, &h)) {
        return false;
    }
    if (*p == ':') {
        p++;
        if (!tz_num(&p, 0, 59, &m)) {
            return false;
        }
        if (*p == ':') {
            p++;
            if (!tz_num(&p, 0, 59, &sec)) {
                return false;
            }
        }
    }
    int off = h * 3600 + m * 60 + sec;
    *out = neg ? -off : off;
    *s = p;
    return true;
}

static bool tz_rule_parse(const char **s, tz_rule *r)
{
    const char *p = *s;
    memset(r, 0, sizeof(*r));
    if (!*p) {
        return false;
    }
    if (*p == 'J') {
        p++;
        r->kind = RULE_JULIAN;
        if (!tz_num(&p, 1, 365, &r->day)) {
            return false;
        }
    } else if (*p == 'M') {
        p++;
        r->kind = RULE_MONTH_WEEK_DAY;
        if (!tz_num(&p, 1, 12, &r->mon) || *p != '.') {
            return false;
        }
        p++;
        if (!tz_num(&p, 1, 5, &r->week) || *p != '.') {
            return false;
        }
        p++;
        if (!tz_num(&p, 0, 6, &r->day)) {
            return false;
        }
    } else {
        r->kind = RULE_DOY;
        if (!tz_num(&p, 0, 365, &r->day)) {
            return false;
        }
    }
    r->time = 2 * 3600;
    if (*p == '/') {
        p++;
        if (!tz_offset(&p, &r->time)) {
            return false;
        }
    }
    *s = p;
    return true;
}

static bool is_leap(int64_t y);
static int days_in(int m, int64_t y);
static int64_t days_from_civil(int64_t y, int m, int d);
static int64_t floor_div(int64_t a, int64_t b);

/* Seconds after the start of @year (UTC) at which @r takes effect under offset @off. */
static int64_t tz_rule_time(int64_t year, const tz_rule *r, int off)
{
    static const int before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
    int64_t s = 0;
    switch (r->kind) {
    case RULE_JULIAN:
        s = (int64_t)(r->day - 1) * SECS_PER_DAY;
        if (is_leap(year) && r->day >= 60) {
            s += SECS_PER_DAY;
        }
        break;
    case RULE_DOY:
        s = (int64_t)r->day * SECS_PER_DAY;
        break;
    default: {
        /* the weekday of the first of the month, then the week-th such day (5 = last) */
        int64_t first = days_from_civil(year, r->mon, 1);
        int dow = (int)(((first + 4) % 7 + 7) % 7);
        int d = r->day - dow;
        if (d < 0) {
            d += 7;
        }
        for (int i = 1; i < r->week; i++) {
            if (d + 7 >= days_in(r->mon, year)) {
                break;
            }
            d += 7;
        }
        d += before[r->mon - 1];
        if (is_leap(year) && r->mon > 2) {
            d++;
        }
        s = (int64_t)d * SECS_PER_DAY;
        break;
    }
    }
    return s + r->time - off;
}

static const char *arena_name(tpl_x *x, const char *s, size_t n)
{
    char *p = tpl_alloc(x, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Go's tzset: the zone the rule @tz gives at @sec; false when the rule does not parse. */
static bool tz_rule_zone(tpl_x *x, const char *tz, int64_t last_tx, int64_t sec, zone_at *out)
{
    const char *p = tz;
    const char *std_name, *dst_name;
    size_t std_len, dst_len;
    int std_off, dst_off;
    if (!tz_name(&p, &std_name, &std_len) || !tz_offset(&p, &std_off)) {
        return false;
    }
    std_off = -std_off;
    if (!*p || *p == ',') {
        out->abbr = arena_name(x, std_name, std_len);
        out->off = std_off;
        out->start = last_tx;
        out->end = INT64_MAX;
        return true;
    }
    if (!tz_name(&p, &dst_name, &dst_len)) {
        return false;
    }
    if (!*p || *p == ',') {
        dst_off = std_off + 3600;
    } else {
        if (!tz_offset(&p, &dst_off)) {
            return false;
        }
        dst_off = -dst_off;
    }
    if (!*p) {
        p = ",M3.2.0,M11.1.0";
    }
    if (*p != ',' && *p != ';') {
        return false;
    }
    p++;
    tz_rule start_rule, end_rule;
    if (!tz_rule_parse(&p, &start_rule) || *p != ',') {
        return false;
    }
    p++;
    if (!tz_rule_parse(&p, &end_rule) || *p) {
        return false;
    }
    int64_t days = floor_div(sec, SECS_PER_DAY);
    /* the year and day of year of sec in UTC */
    int64_t z = days + 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int month = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t year = yoe + era * 400 + (month <= 2);
    int64_t year_start = days_from_civil(year, 1, 1) * SECS_PER_DAY;
    int64_t ysec = sec - year_start;
    int64_t start_sec = tz_rule_time(year, &start_rule, std_off);
    int64_t end_sec = tz_rule_time(year, &end_rule, dst_off);
    if (end_sec < start_sec) {
        /* southern hemisphere: the "DST" period wraps the year end */
        int64_t t = start_sec;
        start_sec = end_sec;
        end_sec = t;
        const char *tn = std_name;
        std_name = dst_name;
        dst_name = tn;
        size_t tl = std_len;
        std_len = dst_len;
        dst_len = tl;
        int to = std_off;
        std_off = dst_off;
        dst_off = to;
    }
    if (ysec < start_sec) {
        out->abbr = arena_name(x, std_name, std_len);
        out->off = std_off;
        out->start = year_start;
        out->end = start_sec + year_start;
    } else if (ysec >= end_sec) {
        out->abbr = arena_name(x, std_name, std_len);
        out->off = std_off;
        out->start = end_sec + year_start;
        out->end = year_start + 365 * SECS_PER_DAY;
    } else {
        out->abbr = arena_name(x, dst_name, dst_len);
        out->off = dst_off;
        out->start = start_sec + year_start;
        out->end = end_sec + year_start;
    }
    return true;
}

/* Go's lookupFirstZone: the zone before the first transition. */
static size_t first_zone(const tpl_zone *z)
{
    bool used = false;
    for (size_t i = 0; i < z->ntx; i++) {
        if (z->idx[i] == 0) {
            used = true;
            break;
        }
    }
    if (!used) {
        return 0;
    }
    if (z->ntx > 0 && z->types[z->idx[0]].dst) {
        for (size_t i = z->idx[0]; i-- > 0;) {
            if (!z->types[i].dst) {
                return i;
            }
        }
    }
    for (size_t i = 0; i < z->ntypes; i++) {
        if (!z->types[i].dst) {
            return i;
        }
    }
    return 0;
}

static zone_at zone_lookup(tpl_x *x, const tpl_zone *z, int64_t sec)
{
    zone_at r = {"UTC", 0, INT64_MIN, INT64_MAX};
    if (!z || z->ntypes == 0) {
        return r;
    }
    if (z->ntx == 0 || sec < z->when[0]) {
        const zone_type *t = &z->types[first_zone(z)];
        r.abbr = t->abbr;
        r.off = t->off;
        r.end = z->ntx > 0 ? z->when[0] : INT64_MAX;
        /* a file without transitions is all rule, as Go reads it */
        if (z->ntx == 0 && z->extend) {
            zone_at e;
            if (tz_rule_zone(x, z->extend, INT64_MIN, sec, &e)) {
                return e;
            }
        }
        return r;
    }
    size_t lo = 0;
    size_t hi = z->ntx;
    while (hi - lo > 1) {
        size_t m = lo + (hi - lo) / 2;
        if (sec < z->when[m]) {
            hi = m;
        } else {
            lo = m;
        }
    }
    const zone_type *t = &z->types[z->idx[lo]];
    r.abbr = t->abbr;
    r.off = t->off;
    r.start = z->when[lo];
    r.end = lo + 1 < z->ntx ? z->when[lo + 1] : INT64_MAX;
    if (lo + 1 == z->ntx && z->extend) {
        zone_at e;
        if (tz_rule_zone(x, z->extend, r.start, sec, &e)) {
            return e;
        }
    }
    return r;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* Decodes a TZif file (version 1 data, or the 64-bit block of version 2 and later). */
static tpl_zone *zone_decode(tpl_x *x, const unsigned char *p, size_t len)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0) {
        return NULL;
    }
    bool v2 = p[4] >= '2';
    size_t width = 4;
    for (int pass = 0; pass < 2; pass++) {
        if (len < 44 || memcmp(p, "TZif", 4) != 0) {
            return NULL;
        }
        size_t isut = be32(p + 20), isstd = be32(p + 24), leap = be32(p + 28);
        size_t timecnt = be32(p + 32), typecnt = be32(p + 36), charcnt = be32(p + 40);
        if (timecnt > len || typecnt > 256 || charcnt > len || leap > len || isut > len ||
            isstd > len) {
            return NULL;
        }
        size_t body =
            timecnt * width + timecnt + typecnt * 6 + charcnt + leap * (width + 4) + isstd + isut;
        if (44 + body > len) {
            return NULL;
        }
        if (v2 && pass == 0) {
            p += 44 + body;
            len -= 44 + body;
            width = 8;
            continue;
        }
        const unsigned char *d = p + 44;
        tpl_zone *z = tpl_alloc(x, sizeof(*z));
        int64_t *when = tpl_alloc(x, (timecnt ? timecnt : 1) * sizeof(*when));
        uint8_t *idx = tpl_alloc(x, timecnt ? timecnt : 1);
        zone_type *types = tpl_alloc(x, (typecnt ? typecnt : 1) * sizeof(*types));
        for (size_t i = 0; i < timecnt; i++) {
            when[i] = width == 8 ? be64(d + i * 8) : (int32_t)be32(d + i * 4);
        }
        d += timecnt * width;
        for (size_t i = 0; i < timecnt; i++) {
            if (d[i] >= typecnt) {
                return NULL;
            }
            idx[i] = d[i];
        }
        d += timecnt;
        const char *chars = (const char *)d + typecnt * 6;
        char *names = tpl_alloc(x, charcnt + 1);
        memcpy(names, chars, charcnt);
        names[charcnt] = '\0';
        for (size_t i = 0; i < typecnt; i++) {
            types[i].off = (int32_t)be32(d + i * 6);
            types[i].dst = d[i * 6 + 4] != 0;
            size_t ai = d[i * 6 + 5];
            types[i].abbr = ai < charcnt ? names + ai : "";
        }
        z->types = types;
        z->ntypes = typecnt;
        z->when = when;
        z->idx = idx;
        z->ntx = timecnt;
        z->extend = NULL;
        /* version 2+: the footer "\nRULE\n" after the 64-bit data */
        const unsigned char *foot = p + 44 + body;
        size_t left = len - 44 - body;
        if (v2 && left > 2 && foot[0] == '\n' && foot[left - 1] == '\n') {
            char *rule = tpl_alloc(x, left - 1);
            memcpy(rule, foot + 1, left - 2);
            rule[left - 2] = '\0';
            z->extend = *rule ? rule : NULL;
        }
        return z;
    }
    return NULL;
}

static tpl_zone *zone_read_file(tpl_x *x, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    unsigned char *buf = co_xmalloc(MAX_ZONE_FILE);
    size_t len = fread(buf, 1, MAX_ZONE_FILE, f);
    bool whole = feof(f) && !ferror(f);
    fclose(f);
    tpl_zone *z = whole ? zone_decode(x, buf, len) : NULL;
    free(buf);
    return z;
}

/* Go's loadLocation over $ZONEINFO (a directory) and the platform's zone directories. */
static tpl_zone *zone_load_file(tpl_x *x, const char *name)
{
    static const char *const dirs[] = {"/usr/share/zoneinfo/", "/usr/share/lib/zoneinfo/",
                                       "/usr/lib/locale/TZ/"};
    char path[4096];
    const char *env = getenv("ZONEINFO"); // NOLINT(concurrency-mt-unsafe): read-only use
    if (env && *env) {
        snprintf(path, sizeof(path), "%s/%s", env, name);
        tpl_zone *z = zone_read_file(x, path);
        if (z) {
            return z;
        }
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(dirs); i++) {
        if (strlen(dirs[i]) + strlen(name) >= sizeof(path)) {
            return NULL;
        }
        snprintf(path, sizeof(path), "%s%s", dirs[i], name);
        tpl_zone *z = zone_read_file(x, path);
        if (z) {
            return z;
        }
    }
    return NULL;
}

/* A zone with no transition, as Go's FixedZone. */
static const tpl_zone *zone_fixed(tpl_x *x, const char *abbr, int32_t off)
{
    zone_type *t = tpl_alloc(x, sizeof(*t));
    t->off = off;
    t->dst = false;
    t->abbr = abbr;
    tpl_zone *z = tpl_alloc(x, sizeof(*z));
    memset(z, 0, sizeof(*z));
    z->types = t;
    z->ntypes = 1;
    z->fixed = true;
    return z;
}

static const tpl_zone utc_local = {.local = true};

/* time.Local as Go initialises it from $TZ: unset reads /etc/localtime, empty or "UTC" is
 * UTC, a path is read as it is, a name is looked up like LoadLocation; failures mean UTC. */
static const tpl_zone *zone_local_load(tpl_x *x)
{
    const char *tz = getenv("TZ"); // NOLINT(concurrency-mt-unsafe): read-only use
    tpl_zone *z = NULL;
    if (!tz) {
        z = zone_read_file(x, "/etc/localtime");
    } else {
        if (*tz == ':') {
            tz++;
        }
        if (*tz == '/') {
            z = zone_read_file(x, tz);
        } else if (*tz && strcmp(tz, "UTC") != 0) {
            z = zone_load_file(x, tz);
        }
    }
    if (!z) {
        return &utc_local;
    }
    z->local = true;
    return z;
}

/* time.Local, read once per rendering session (Go reads it once per process). */
static const tpl_zone *zone_local(tpl_x *x)
{
    if (!x->sess) {
        return zone_local_load(x);
    }
    if (!x->sess->local_zone) {
        x->sess->local_zone = zone_local_load(x);
    }
    return x->sess->local_zone;
}

/* Go's LoadLocation; false when the name is unknown or not allowed. */
static bool zone_load(tpl_x *x, const char *name, const tpl_zone **out)
{
    if (!*name || strcmp(name, "UTC") == 0) {
        *out = NULL;
        return true;
    }
    if (strcmp(name, "Local") == 0) {
        *out = zone_local(x);
        return true;
    }
    if (name[0] == '/' || name[0] == '\\') {
        return false;
    }
    for (const char *p = name; *p; p++) {
        /* Go refuses ".." anywhere in the name, as a path element or not */
        if (p[0] == '.' && p[1] == '.') {
            return false;
        }
    }
    const tpl_zone *z = zone_load_file(x, name);
    if (!z) {
        return false;
    }
    *out = z;
    return true;
}

/* ---- calendar ----------------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

typedef struct civil {
    int64_t year;
    int month; /* 1..12 */
    int day;   /* 1..31 */
    int yday;  /* 1..366 */
    int wday;  /* 0 = Sunday */
    int hour, min, sec;
} civil;

static civil civil_from_local(int64_t local)
{
    civil c;
    int64_t days = floor_div(local, SECS_PER_DAY);
    int64_t secs = local - days * SECS_PER_DAY;
    c.hour = (int)(secs / 3600);
    c.min = (int)(secs / 60 % 60);
    c.sec = (int)(secs % 60);
    c.wday = (int)(((days + 4) % 7 + 7) % 7);
    int64_t z = days + 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    c.day = (int)(doy - (153 * mp + 2) / 5 + 1);
    c.month = (int)(mp < 10 ? mp + 3 : mp - 9);
    c.year = yoe + era * 400 + (c.month <= 2);
    c.yday = (int)(days - days_from_civil(c.year, 1, 1) + 1);
    return c;
}

static int64_t clock_secs(int hour, int min, int sec)
{
    return (int64_t)hour * 3600 + (int64_t)min * 60 + sec;
}

static bool is_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int days_in(int m, int64_t y)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* ---- time values -------------------------------------------------------------------------- */

static const tpl_func time_methods[];
static int time_marshal(tpl_x *x, co_buf *out, const tv *v);

const tv_type T_TIME = {.kind = TK_STRUCT,
                        .name = "time.Time",
                        .methods = time_methods,
                        .nmethods = 17,
                        .marshal_json = time_marshal};

static const tpl_func month_methods[];
static const tpl_func weekday_methods[];
static const tv_type T_MONTH = {.kind = TK_INT,
                                .name = "time.Month",
                                .methods = month_methods,
                                .nmethods = 1};
static const tv_type T_WEEKDAY = {.kind = TK_INT,
                                  .name = "time.Weekday",
                                  .methods = weekday_methods,
                                  .nmethods = 1};

static const char *const long_months[] = {"January",   "February", "March",    "April",
                                          "May",       "June",     "July",     "August",
                                          "September", "October",  "November", "December"};
static const char *const long_days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                        "Thursday", "Friday", "Saturday"};

static const tv_time zero_time = {ZERO_UNIX, 0, 0, "UTC", INT64_MIN, NULL};

/* A time value at @sec/@nsec in @loc (NULL: UTC), its zone resolved. */
static tv time_value(tpl_x *x, int64_t sec, int32_t nsec, const tpl_zone *loc, int64_t mono)
{
    tv_time *t = tpl_alloc(x, sizeof(*t));
    zone_at za = zone_lookup(x, loc, sec);
    t->sec = sec;
    t->nsec = nsec;
    t->off = za.off;
    t->zone = za.abbr;
    t->mono = mono;
    t->loc = loc;
    tv_obj *o = tpl_alloc(x, sizeof(*o));
    o->native = t;
    tv r = {&T_TIME, {.o = o}};
    return r;
}

static const tv_time *tm_of(const tv *v)
{
    return v->u.o && v->u.o->native ? v->u.o->native : &zero_time;
}

/* Go's == on two times (and DeepEqual): the same instant, monotonic reading and location;
 * Local is one location however often it was loaded, and zones made for parsed offsets
 * compare by content (as DeepEqual does; == would compare their addresses). */
bool tpl_time_equal(const tv *a, const tv *b)
{
    const tv_time *x = tm_of(a);
    const tv_time *y = tm_of(b);
    if (x->sec != y->sec || x->nsec != y->nsec || x->mono != y->mono) {
        return false;
    }
    const tpl_zone *p = x->loc;
    const tpl_zone *q = y->loc;
    if (p == q) {
        return true;
    }
    if (!p || !q) {
        return false;
    }
    if (p->local || q->local) {
        return p->local && q->local;
    }
    return p->fixed && q->fixed && p->types[0].off == q->types[0].off &&
           strcmp(p->types[0].abbr, q->types[0].abbr) == 0;
}

bool tpl_is_time(const tv *v)
{
    return v->t == &T_TIME || (tv_kind(v) == TK_PTR && v->t->elem == &T_TIME);
}

/* The monotonic clock relative to the first reading in this process, like Go's. */
static int64_t mono_now(void)
{
    static _Atomic int64_t start = INT64_MIN;
    int64_t now = co_time_monotonic();
    int64_t expect = INT64_MIN;
    atomic_compare_exchange_strong(&start, &expect, now - 1);
    return now - atomic_load(&start);
}

static tv time_now(tpl_x *x)
{
    int64_t ns = co_time_now();
    int64_t sec = floor_div(ns, 1000000000);
    return time_value(x, sec, (int32_t)(ns - sec * 1000000000), zone_local(x), mono_now());
}

/* Go's Date(): a civil time in @loc, normalised, its offset chosen as Go chooses it around
 * transitions. */
static tv time_date(tpl_x *x,
                    int64_t year,
                    int month,
                    int day,
                    int hour,
                    int min,
                    int sec,
                    int32_t nsec,
                    const tpl_zone *loc)
{
    int64_t unix = days_from_civil(year, month, 1) * SECS_PER_DAY +
                   (int64_t)(day - 1) * SECS_PER_DAY + clock_secs(hour, min, sec);
    zone_at za = zone_lookup(x, loc, unix);
    if (za.off != 0) {
        int64_t utc = unix - za.off;
        if (utc < za.start || utc >= za.end) {
            za = zone_lookup(x, loc, utc);
        }
        unix -= za.off;
    }
    return time_value(x, unix, nsec, loc, INT64_MIN);
}

/* ---- formatting --------------------------------------------------------------------------- */

enum std {
    STD_NONE,
    STD_LONG_MONTH,
    STD_MONTH,
    STD_NUM_MONTH,
    STD_ZERO_MONTH,
    STD_LONG_WEEKDAY,
    STD_WEEKDAY,
    STD_DAY,
    STD_UNDER_DAY,
    STD_ZERO_DAY,
    STD_UNDER_YEARDAY,
    STD_ZERO_YEARDAY,
    STD_HOUR,
    STD_HOUR12,
    STD_ZERO_HOUR12,
    STD_MINUTE,
    STD_ZERO_MINUTE,
    STD_SECOND,
    STD_ZERO_SECOND,
    STD_LONG_YEAR,
    STD_YEAR,
    STD_PM,
    STD_PM_LOWER,
    STD_TZ,
    STD_ISO_TZ,               /* Z0700 */
    STD_ISO_SECONDS_TZ,       /* Z070000 */
    STD_ISO_SHORT_TZ,         /* Z07 */
    STD_ISO_COLON_TZ,         /* Z07:00 */
    STD_ISO_COLON_SECONDS_TZ, /* Z07:00:00 */
    STD_NUM_TZ,               /* -0700 */
    STD_NUM_SECONDS_TZ,       /* -070000 */
    STD_NUM_SHORT_TZ,         /* -07 */
    STD_NUM_COLON_TZ,         /* -07:00 */
    STD_NUM_COLON_SECONDS_TZ, /* -07:00:00 */
    STD_FRAC0,                /* .000 */
    STD_FRAC9,                /* .999 */
};

typedef struct chunk {
    size_t prefix; /* literal bytes before the element */
    int std;       /* STD_NONE: no element, the rest is literal */
    size_t len;    /* length of the element in the layout */
    int digits;    /* fractional seconds: the number of digits */
    char sep;      /* fractional seconds: '.' or ',' */
} chunk;

static bool starts_lower(const char *s, size_t n)
{
    return n > 0 && s[0] >= 'a' && s[0] <= 'z';
}

static bool has(const char *s, size_t n, size_t i, const char *word)
{
    size_t w = strlen(word);
    return n >= i + w && memcmp(s + i, word, w) == 0;
}

static bool digit_at(const char *s, size_t n, size_t i)
{
    return i < n && s[i] >= '0' && s[i] <= '9';
}

/* The next layout element of l[0..n), as Go's nextStdChunk finds it. */
static chunk next_chunk(const char *l, size_t n)
{
    static const struct {
        const char *word;
        int std;
    } dash[] = {{"-070000", STD_NUM_SECONDS_TZ},
                {"-07:00:00", STD_NUM_COLON_SECONDS_TZ},
                {"-0700", STD_NUM_TZ},
                {"-07:00", STD_NUM_COLON_TZ},
                {"-07", STD_NUM_SHORT_TZ}},
      zed[] = {{"Z070000", STD_ISO_SECONDS_TZ},
               {"Z07:00:00", STD_ISO_COLON_SECONDS_TZ},
               {"Z0700", STD_ISO_TZ},
               {"Z07:00", STD_ISO_COLON_TZ},
               {"Z07", STD_ISO_SHORT_TZ}};
    static const int zero_x[] = {STD_ZERO_MONTH,  STD_ZERO_DAY,    STD_ZERO_HOUR12,
                                 STD_ZERO_MINUTE, STD_ZERO_SECOND, STD_YEAR};
    for (size_t i = 0; i < n; i++) {
        chunk c = {i, STD_NONE, 0, 0, '.'};
        switch (l[i]) {
        case 'J':
            if (has(l, n, i, "January")) {
                c.std = STD_LONG_MONTH, c.len = 7;
                return c;
            }
            if (has(l, n, i, "Jan") && !starts_lower(l + i + 3, n - i - 3)) {
                c.std = STD_MONTH, c.len = 3;
                return c;
            }
            break;
        case 'M':
            if (has(l, n, i, "Monday")) {
                c.std = STD_LONG_WEEKDAY, c.len = 6;
                return c;
            }
            if (has(l, n, i, "Mon") && !starts_lower(l + i + 3, n - i - 3)) {
                c.std = STD_WEEKDAY, c.len = 3;
                return c;
            }
            if (has(l, n, i, "MST")) {
                c.std = STD_TZ, c.len = 3;
                return c;
            }
            break;
        case '0':
            if (i + 1 < n && l[i + 1] >= '1' && l[i + 1] <= '6') {
                c.std = zero_x[l[i + 1] - '1'], c.len = 2;
                return c;
            }
            if (has(l, n, i, "002")) {
                c.std = STD_ZERO_YEARDAY, c.len = 3;
                return c;
            }
            break;
        case '1':
            if (i + 1 < n && l[i + 1] == '5') {
                c.std = STD_HOUR, c.len = 2;
                return c;
            }
            c.std = STD_NUM_MONTH, c.len = 1;
            return c;
        case '2':
            if (has(l, n, i, "2006")) {
                c.std = STD_LONG_YEAR, c.len = 4;
                return c;
            }
            c.std = STD_DAY, c.len = 1;
            return c;
        case '_':
            if (i + 1 < n && l[i + 1] == '2') {
                if (has(l, n, i + 1, "2006")) {
                    /* a literal "_" before the year */
                    c.prefix = i + 1, c.std = STD_LONG_YEAR, c.len = 4;
                    return c;
                }
                c.std = STD_UNDER_DAY, c.len = 2;
                return c;
            }
            if (has(l, n, i, "__2")) {
                c.std = STD_UNDER_YEARDAY, c.len = 3;
                return c;
            }
            break;
        case '3':
            c.std = STD_HOUR12, c.len = 1;
            return c;
        case '4':
            c.std = STD_MINUTE, c.len = 1;
            return c;
        case '5':
            c.std = STD_SECOND, c.len = 1;
            return c;
        case 'P':
            if (i + 1 < n && l[i + 1] == 'M') {
                c.std = STD_PM, c.len = 2;
                return c;
            }
            break;
        case 'p':
            if (i + 1 < n && l[i + 1] == 'm') {
                c.std = STD_PM_LOWER, c.len = 2;
                return c;
            }
            break;
        case '-':
            for (size_t k = 0; k < CO_ARRAY_SIZE(dash); k++) {
                if (has(l, n, i, dash[k].word)) {
                    c.std = dash[k].std, c.len = strlen(dash[k].word);
                    return c;
                }
            }
            break;
        case 'Z':
            for (size_t k = 0; k < CO_ARRAY_SIZE(zed); k++) {
                if (has(l, n, i, zed[k].word)) {
                    c.std = zed[k].std, c.len = strlen(zed[k].word);
                    return c;
                }
            }
            break;
        case '.':
        case ',':
            if (i + 1 < n && (l[i + 1] == '0' || l[i + 1] == '9')) {
                char ch = l[i + 1];
                size_t j = i + 1;
                while (j < n && l[j] == ch) {
                    j++;
                }
                if (!digit_at(l, n, j)) {
                    c.std = ch == '0' ? STD_FRAC0 : STD_FRAC9;
                    c.len = j - i;
                    c.digits = (int)((j - i - 1) & 0xfff);
                    c.sep = l[i];
                    return c;
                }
            }
            break;
        default:
            break;
        }
    }
    chunk none = {n, STD_NONE, 0, 0, '.'};
    return none;
}

static int put_int(co_buf *b, int64_t v, int width)
{
    char tmp[32];
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int rc = 0;
    if (v < 0) {
        rc = co_buf_putc(b, '-');
    }
    int len = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)u);
    for (int i = len; i < width && rc == 0; i++) {
        rc = co_buf_putc(b, '0');
    }
    return rc < 0 ? rc : co_buf_put(b, tmp, (size_t)len);
}

static int put_frac(co_buf *b, int32_t nsec, const chunk *c)
{
    char digits[10];
    snprintf(digits, sizeof(digits), "%09d", nsec);
    int n = c->digits > 9 ? 9 : c->digits;
    if (c->std == STD_FRAC9) {
        while (n > 0 && digits[n - 1] == '0') {
            n--;
        }
        if (n == 0) {
            return 0;
        }
    }
    int rc = co_buf_putc(b, c->sep);
    return rc < 0 ? rc : co_buf_put(b, digits, (size_t)n);
}

static int put_offset(co_buf *b, int std, int32_t offset)
{
    bool iso = std == STD_ISO_TZ || std == STD_ISO_COLON_TZ || std == STD_ISO_SECONDS_TZ ||
               std == STD_ISO_SHORT_TZ || std == STD_ISO_COLON_SECONDS_TZ;
    if (iso && offset == 0) {
        return co_buf_putc(b, 'Z');
    }
    int32_t zone = offset / 60;
    int32_t abs_off = offset;
    int rc;
    if (zone < 0) {
        rc = co_buf_putc(b, '-');
        zone = -zone;
        abs_off = -abs_off;
    } else {
        rc = co_buf_putc(b, '+');
    }
    rc = rc < 0 ? rc : put_int(b, zone / 60, 2);
    bool colon = std == STD_ISO_COLON_TZ || std == STD_NUM_COLON_TZ ||
                 std == STD_ISO_COLON_SECONDS_TZ || std == STD_NUM_COLON_SECONDS_TZ;
    if (colon && rc == 0) {
        rc = co_buf_putc(b, ':');
    }
    if (std != STD_NUM_SHORT_TZ && std != STD_ISO_SHORT_TZ && rc == 0) {
        rc = put_int(b, zone % 60, 2);
    }
    if (std == STD_ISO_SECONDS_TZ || std == STD_NUM_SECONDS_TZ || std == STD_NUM_COLON_SECONDS_TZ ||
        std == STD_ISO_COLON_SECONDS_TZ) {
        if ((std == STD_NUM_COLON_SECONDS_TZ || std == STD_ISO_COLON_SECONDS_TZ) && rc == 0) {
            rc = co_buf_putc(b, ':');
        }
        rc = rc < 0 ? rc : put_int(b, abs_off % 60, 2);
    }
    return rc;
}

static int put_element(co_buf *b, const chunk *c, const tv_time *t, const civil *cv)
{
    int hr;
    switch (c->std) {
    case STD_YEAR:
        return put_int(b, (cv->year < 0 ? -cv->year : cv->year) % 100, 2);
    case STD_LONG_YEAR:
        return put_int(b, cv->year, 4);
    case STD_MONTH:
        return co_buf_put(b, long_months[cv->month - 1], 3);
    case STD_LONG_MONTH:
        return co_buf_puts(b, long_months[cv->month - 1]);
    case STD_NUM_MONTH:
        return put_int(b, cv->month, 0);
    case STD_ZERO_MONTH:
        return put_int(b, cv->month, 2);
    case STD_WEEKDAY:
        return co_buf_put(b, long_days[cv->wday], 3);
    case STD_LONG_WEEKDAY:
        return co_buf_puts(b, long_days[cv->wday]);
    case STD_DAY:
        return put_int(b, cv->day, 0);
    case STD_UNDER_DAY:
        if (cv->day < 10 && co_buf_putc(b, ' ') < 0) {
            return -1;
        }
        return put_int(b, cv->day, 0);
    case STD_ZERO_DAY:
        return put_int(b, cv->day, 2);
    case STD_UNDER_YEARDAY:
        if (cv->yday < 100 && co_buf_putc(b, ' ') < 0) {
            return -1;
        }
        if (cv->yday < 10 && co_buf_putc(b, ' ') < 0) {
            return -1;
        }
        return put_int(b, cv->yday, 0);
    case STD_ZERO_YEARDAY:
        return put_int(b, cv->yday, 3);
    case STD_HOUR:
        return put_int(b, cv->hour, 2);
    case STD_HOUR12:
    case STD_ZERO_HOUR12:
        hr = cv->hour % 12 == 0 ? 12 : cv->hour % 12;
        return put_int(b, hr, c->std == STD_ZERO_HOUR12 ? 2 : 0);
    case STD_MINUTE:
        return put_int(b, cv->min, 0);
    case STD_ZERO_MINUTE:
        return put_int(b, cv->min, 2);
    case STD_SECOND:
        return put_int(b, cv->sec, 0);
    case STD_ZERO_SECOND:
        return put_int(b, cv->sec, 2);
    case STD_PM:
        return co_buf_puts(b, cv->hour >= 12 ? "PM" : "AM");
    case STD_PM_LOWER:
        return co_buf_puts(b, cv->hour >= 12 ? "pm" : "am");
    case STD_TZ:
        if (t->zone && *t->zone) {
            return co_buf_puts(b, t->zone);
        } else {
            int32_t zone = t->off / 60;
            int rc = co_buf_putc(b, zone < 0 ? '-' : '+');
            zone = zone < 0 ? -zone : zone;
            rc = rc < 0 ? rc : put_int(b, zone / 60, 2);
            return rc < 0 ? rc : put_int(b, zone % 60, 2);
        }
    case STD_FRAC0:
    case STD_FRAC9:
        return put_frac(b, t->nsec, c);
    default:
        return put_offset(b, c->std, t->off);
    }
}

/* Go's Time.AppendFormat. */
static int time_format(co_buf *b, const tv_time *t, const char *l, size_t n)
{
    civil cv = civil_from_local(t->sec + t->off);
    while (n > 0) {
        chunk c = next_chunk(l, n);
        if (c.prefix > 0 && co_buf_put(b, l, c.prefix) < 0) {
            return -1;
        }
        if (c.std == STD_NONE) {
            break;
        }
        if (put_element(b, &c, t, &cv) < 0) {
            return -1;
        }
        l += c.prefix + c.len;
        n -= c.prefix + c.len;
    }
    return 0;
}

/* Go's Time.String. */
static int time_string(co_buf *b, const tv_time *t)
{
    static const char layout[] = "2006-01-02 15:04:05.999999999 -0700 MST";
    if (time_format(b, t, layout, sizeof(layout) - 1) < 0) {
        return -1;
    }
    if (t->mono == INT64_MIN) {
        return 0;
    }
    uint64_t m = t->mono < 0 ? 0 - (uint64_t)t->mono : (uint64_t)t->mono;
    uint64_t sec = m / 1000000000;
    uint64_t frac = m % 1000000000;
    return co_buf_printf(b, " m=%c%llu.%09llu", t->mono < 0 ? '-' : '+', (unsigned long long)sec,
                         (unsigned long long)frac);
}

static int time_marshal(tpl_x *x, co_buf *out, const tv *v)
{
    static const char layout[] = "2006-01-02T15:04:05.999999999Z07:00";
    const tv_time *t = tm_of(v);
    civil cv = civil_from_local(t->sec + t->off);
    if (cv.year < 0 || cv.year > 9999) {
        return tpl_fail(x, "json: error calling MarshalJSON for type time.Time: "
                           "Time.MarshalJSON: year outside of range [0,9999]");
    }
    int rc = co_buf_putc(out, '"');
    rc = rc < 0 ? rc : time_format(out, t, layout, sizeof(layout) - 1);
    return rc < 0 ? rc : co_buf_putc(out, '"');
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* Go's quote() for parse errors: printable ASCII as it is, anything else as \x bytes. */
static int go_quote(co_buf *b, const char *s, size_t n)
{
    int rc = co_buf_putc(b, '"');
    for (size_t i = 0; i < n && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80 || c < ' ') {
            size_t w = 1;
            if (c >= 0x80) {
                (void)co_utf8_decode_rune(s + i, n - i, &w);
                w = w ? w : 1;
            }
            for (size_t j = 0; j < w && rc == 0; j++) {
                rc = co_buf_printf(b, "\\x%02x", (unsigned char)s[i + j]);
            }
            i += w - 1;
            continue;
        }
        if (c == '"' || c == '\\') {
            rc = co_buf_putc(b, '\\');
        }
        rc = rc < 0 ? rc : co_buf_putc(b, (char)c);
    }
    return rc < 0 ? rc : co_buf_putc(b, '"');
}

typedef struct pstr {
    const char *s;
    size_t n;
} pstr;

static void adv(pstr *v, size_t k)
{
    v->s += k;
    v->n -= k;
}

static bool pdigit(const pstr *v, size_t i)
{
    return i < v->n && v->s[i] >= '0' && v->s[i] <= '9';
}

/* getnum: one or two digits (exactly two when fixed). */
static bool getnum(pstr *v, bool fixed, int *out)
{
    if (!pdigit(v, 0)) {
        return false;
    }
    if (!pdigit(v, 1)) {
        if (fixed) {
            return false;
        }
        *out = v->s[0] - '0';
        adv(v, 1);
        return true;
    }
    *out = (v->s[0] - '0') * 10 + v->s[1] - '0';
    adv(v, 2);
    return true;
}

static bool getnum3(pstr *v, bool fixed, int *out)
{
    int n = 0;
    size_t i = 0;
    for (; i < 3 && pdigit(v, i); i++) {
        n = n * 10 + v->s[i] - '0';
    }
    if (i == 0 || (fixed && i != 3)) {
        return false;
    }
    *out = n;
    adv(v, i);
    return true;
}

/* Go's time.atoi over exactly s[0..n): strconv.Atoi, except that no digits read as 0. */
static bool patoi(const char *s, size_t n, int64_t *out)
{
    if (n == (size_t)(n > 0 && (s[0] == '-' || s[0] == '+'))) {
        *out = 0;
        return true;
    }
    return co_strconv_parse_int(out, s, n, 10, 0) == 0;
}

static bool case_match(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c1 = (unsigned char)a[i];
        unsigned char c2 = (unsigned char)b[i];
        if (c1 != c2) {
            c1 |= 'a' - 'A';
            c2 |= 'a' - 'A';
            if (c1 != c2 || c1 < 'a' || c1 > 'z') {
                return false;
            }
        }
    }
    return true;
}

static int lookup_name(pstr *v, const char *const *tab, size_t ntab, size_t prefix)
{
    for (size_t i = 0; i < ntab; i++) {
        size_t w = prefix ? prefix : strlen(tab[i]);
        if (v->n >= w && case_match(v->s, tab[i], w)) {
            adv(v, w);
            return (int)i;
        }
    }
    return -1;
}

/* skip: the literal prefix, a run of spaces in it matching any run (at least one unless the
 * value has ended) */
static bool skip_prefix(pstr *v, const char *p, size_t n)
{
    while (n > 0) {
        if (*p == ' ') {
            if (v->n > 0 && v->s[0] != ' ') {
                return false;
            }
            while (n > 0 && *p == ' ') {
                p++;
                n--;
            }
            while (v->n > 0 && v->s[0] == ' ') {
                adv(v, 1);
            }
            continue;
        }
        if (v->n == 0 || v->s[0] != *p) {
            return false;
        }
        p++;
        n--;
        adv(v, 1);
    }
    return true;
}

static size_t signed_offset_len(const pstr *v)
{
    if (v->n == 0 || (v->s[0] != '-' && v->s[0] != '+')) {
        return 0;
    }
    uint64_t x = 0;
    size_t i = 1;
    for (; i < v->n && v->s[i] >= '0' && v->s[i] <= '9'; i++) {
        if (x > (UINT64_MAX - 9) / 10) {
            return 0;
        }
        x = x * 10 + (uint64_t)(v->s[i] - '0');
    }
    if (i == 1 || x > 23) {
        return 0;
    }
    return i;
}

/* Go's parseTimeZone: the length of a zone abbreviation at the start, 0 if none. */
static size_t tz_name_len(const pstr *v)
{
    if (v->n < 3) {
        return 0;
    }
    if (v->n >= 4 && (memcmp(v->s, "ChST", 4) == 0 || memcmp(v->s, "MeST", 4) == 0)) {
        return 4;
    }
    if (memcmp(v->s, "GMT", 3) == 0) {
        pstr rest = {v->s + 3, v->n - 3};
        return 3 + signed_offset_len(&rest);
    }
    if (v->s[0] == '+' || v->s[0] == '-') {
        return signed_offset_len(v);
    }
    size_t up = 0;
    while (up < 6 && up < v->n && v->s[up] >= 'A' && v->s[up] <= 'Z') {
        up++;
    }
    switch (up) {
    case 5:
        return v->s[4] == 'T' ? 5 : 0;
    case 4:
        return v->s[3] == 'T' || memcmp(v->s, "WITA", 4) == 0 ? 4 : 0;
    case 3:
        return 3;
    default:
        return 0;
    }
}

/* parseNanoseconds over v[0..nbytes) (a separator and digits). */
static bool parse_nanos(const pstr *v, size_t nbytes, int32_t *out, const char **range)
{
    if (v->s[0] != '.' && v->s[0] != ',') {
        return false;
    }
    if (nbytes > 10) {
        nbytes = 10;
    }
    int64_t ns;
    if (!patoi(v->s + 1, nbytes - 1, &ns)) {
        return false;
    }
    if (ns < 0) {
        *range = ": fractional second out of range";
        return true;
    }
    for (size_t i = nbytes; i < 10; i++) {
        ns *= 10;
    }
    *out = (int32_t)ns;
    return true;
}

typedef struct perr {
    const char *elem; /* layout element */
    size_t elem_len;
    pstr value;         /* what was left of the value */
    const char *msg;    /* NULL: "cannot parse" form */
    bool msg_quote_val; /* msg is ": extra text: " followed by the quoted rest */
} perr;

static int
parse_fail(tpl_x *x, const char *layout, size_t ln, const char *value, size_t vn, const perr *e)
{
    co_buf b = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = co_buf_puts(&b, "parsing time ");
    rc = rc < 0 ? rc : go_quote(&b, value, vn);
    if (e->msg) {
        rc = rc < 0 ? rc : co_buf_puts(&b, e->msg);
        if (e->msg_quote_val) {
            rc = rc < 0 ? rc : go_quote(&b, e->value.s, e->value.n);
        }
    } else {
        rc = rc < 0 ? rc : co_buf_puts(&b, " as ");
        rc = rc < 0 ? rc : go_quote(&b, layout, ln);
        rc = rc < 0 ? rc : co_buf_puts(&b, ": cannot parse ");
        rc = rc < 0 ? rc : go_quote(&b, e->value.s, e->value.n);
        rc = rc < 0 ? rc : co_buf_puts(&b, " as ");
        rc = rc < 0 ? rc : go_quote(&b, e->elem, e->elem_len);
    }
    (void)rc;
    tpl_fail(x, "%s", co_buf_cstr(&b));
    co_buf_dispose(&b);
    return -1;
}

/* ---- parsing: one parser per layout element ----------------------------------------------- */

static const char *const short_months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const short_days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

/* One parse in progress: what is left of the layout and the value, the element being read,
 * and the fields read so far (the locals of Go's parse; -1 marks a month, day or day of the
 * year the value has not given). */
typedef struct tparse {
    pstr layout; /* after the element being read */
    pstr value;
    chunk elem;
    int64_t year;
    int month, day, yday, hour, min, sec;
    int32_t nsec;
    bool am, pm;
    bool z_utc;            /* "UTC", or "Z" for an ISO offset: the time is in UTC */
    bool have_off;         /* a numeric offset was read into zone_off */
    int32_t zone_off;      /* seconds east of UTC */
    const char *zone_name; /* an abbreviation, borrowed from the value; NULL if none */
    size_t zone_name_len;
    const char *range; /* the value matched but is out of range: ": hour out of range" */
} tparse;

/* A field parser reads its element at the start of p->value and advances past what it took.
 * It returns false when the value does not match the element ("cannot parse"), and sets
 * p->range when it matches but is out of range, which Go reports first. Each reads its
 * element as Go's parse does, quirks included (noted where they surprise). */
typedef bool field_parser(tparse *p);

/* "06": two digits, 69..99 in the 1900s, the rest in the 2000s. */
static bool parse_year2(tparse *p)
{
    int64_t n;
    if (p->value.n < 2 || !patoi(p->value.s, 2, &n)) {
        return false;
    }
    p->year = n >= 69 ? n + 1900 : n + 2000;
    adv(&p->value, 2);
    return true;
}

/* "2006": four bytes from a digit on, taken even when they fail to parse (the error then
 * quotes what follows them, as Go's does). */
static bool parse_year4(tparse *p)
{
    if (p->value.n < 4 || !pdigit(&p->value, 0)) {
        return false;
    }
    bool ok = patoi(p->value.s, 4, &p->year);
    adv(&p->value, 4);
    return ok;
}

/* "Jan", "January": the name in any case. */
static bool parse_month_name(tparse *p)
{
    const char *const *names = p->elem.std == STD_LONG_MONTH ? long_months : short_months;
    p->month = lookup_name(&p->value, names, 12, 0) + 1;
    return p->month > 0;
}

/* "1", "01" */
static bool parse_month_number(tparse *p)
{
    bool ok = getnum(&p->value, p->elem.std == STD_ZERO_MONTH, &p->month);
    if (ok && (p->month <= 0 || p->month > 12)) {
        p->range = ": month out of range";
    }
    return ok;
}

/* "Mon", "Monday": checked, never used. */
static bool parse_weekday(tparse *p)
{
    const char *const *names = p->elem.std == STD_LONG_WEEKDAY ? long_days : short_days;
    return lookup_name(&p->value, names, 7, 0) >= 0;
}

/* "2", "_2", "02": any one or two digits; the date is checked once complete. */
static bool parse_day(tparse *p)
{
    if (p->elem.std == STD_UNDER_DAY && p->value.n > 0 && p->value.s[0] == ' ') {
        adv(&p->value, 1);
    }
    return getnum(&p->value, p->elem.std == STD_ZERO_DAY, &p->day);
}

/* "__2", "002": up to three digits (exactly three for "002"). */
static bool parse_year_day(tparse *p)
{
    for (int i = 0; i < 2; i++) {
        if (p->elem.std == STD_UNDER_YEARDAY && p->value.n > 0 && p->value.s[0] == ' ') {
            adv(&p->value, 1);
        }
    }
    return getnum3(&p->value, p->elem.std == STD_ZERO_YEARDAY, &p->yday);
}

/* A clock field of one or two digits, range-checked even when no digits were found. Go's
 * getnum zeroes the field then; here the field keeps what an earlier element read, so "15 3"
 * against "15 x" reports the hour out of range where Go cannot parse "x" (a known difference:
 * both are errors, only the message differs). */
static bool clock_field(tparse *p, int *field, bool fixed, int max, const char *range)
{
    bool ok = getnum(&p->value, fixed, field);
    if (*field < 0 || *field > max) {
        p->range = range;
    }
    return ok;
}

/* "15" */
static bool parse_hour(tparse *p)
{
    return clock_field(p, &p->hour, false, 23, ": hour out of range");
}

/* "3", "03" */
static bool parse_hour12(tparse *p)
{
    return clock_field(p, &p->hour, p->elem.std == STD_ZERO_HOUR12, 12, ": hour out of range");
}

/* "4", "04" */
static bool parse_minute(tparse *p)
{
    return clock_field(p, &p->min, p->elem.std == STD_ZERO_MINUTE, 59, ": minute out of range");
}

/* "5", "05", and a fraction the layout does not name right after them, taken anyway; its
 * result then decides, so ".5" alone passes for "05" as in Go. */
static bool parse_second(tparse *p)
{
    bool ok = clock_field(p, &p->sec, p->elem.std == STD_ZERO_SECOND, 59, ": second out of range");
    pstr *v = &p->value;
    if (p->range || v->n < 2 || (v->s[0] != '.' && v->s[0] != ',') || !pdigit(v, 1)) {
        return ok;
    }
    chunk next = next_chunk(p->layout.s, p->layout.n);
    if (next.std == STD_FRAC0 || next.std == STD_FRAC9) {
        return ok;
    }
    size_t m = 2;
    while (pdigit(v, m)) {
        m++;
    }
    ok = parse_nanos(v, m, &p->nsec, &p->range);
    adv(v, m);
    return ok;
}

/* "PM", "pm": that case only. */
static bool parse_am_pm(tparse *p)
{
    bool upper = p->elem.std == STD_PM;
    if (p->value.n < 2) {
        return false;
    }
    bool ok = true;
    if (memcmp(p->value.s, upper ? "PM" : "pm", 2) == 0) {
        p->pm = true;
    } else if (memcmp(p->value.s, upper ? "AM" : "am", 2) == 0) {
        p->am = true;
    } else {
        ok = false;
    }
    adv(&p->value, 2);
    return ok;
}

/* "MST": "UTC", or an abbreviation as parseTimeZone finds one, resolved once complete. */
static bool parse_zone_name(tparse *p)
{
    if (p->value.n >= 3 && memcmp(p->value.s, "UTC", 3) == 0) {
        p->z_utc = true;
        adv(&p->value, 3);
        return true;
    }
    size_t k = tz_name_len(&p->value);
    if (k == 0) {
        return false;
    }
    p->zone_name = p->value.s;
    p->zone_name_len = k;
    adv(&p->value, k);
    return true;
}

/* ".000": exactly that many bytes after the separator, whatever they are. */
static bool parse_frac0(tparse *p)
{
    size_t nd = 1 + (size_t)p->elem.digits;
    if (p->value.n < nd) {
        return false;
    }
    bool ok = parse_nanos(&p->value, nd, &p->nsec, &p->range);
    adv(&p->value, nd);
    return ok;
}

/* ".999": optional; up to nine digits, more are left for what follows. */
static bool parse_frac9(tparse *p)
{
    pstr *v = &p->value;
    if (v->n < 2 || (v->s[0] != '.' && v->s[0] != ',') || !pdigit(v, 1)) {
        return true;
    }
    size_t i = 0;
    while (i < 9 && pdigit(v, i + 1)) {
        i++;
    }
    bool ok = parse_nanos(v, 1 + i, &p->nsec, &p->range);
    adv(v, 1 + i);
    return ok;
}

/* Where a numeric offset's parts are in the value (after the sign at 0, hours at 1). */
typedef struct offset_shape {
    size_t len;  /* bytes taken, sign included */
    size_t mm;   /* minutes, 0: none ("00") */
    size_t ss;   /* seconds, 0: none ("00") */
    bool colons; /* ':' before the minutes and the seconds */
} offset_shape;

static offset_shape offset_shape_of(int std)
{
    switch (std) {
    case STD_ISO_SHORT_TZ:
    case STD_NUM_SHORT_TZ:
        return (offset_shape){3, 0, 0, false}; /* -07 */
    case STD_ISO_COLON_TZ:
    case STD_NUM_COLON_TZ:
        return (offset_shape){6, 4, 0, true}; /* -07:00 */
    case STD_ISO_SECONDS_TZ:
    case STD_NUM_SECONDS_TZ:
        return (offset_shape){7, 3, 5, false}; /* -070000 */
    case STD_ISO_COLON_SECONDS_TZ:
    case STD_NUM_COLON_SECONDS_TZ:
        return (offset_shape){9, 4, 7, true}; /* -07:00:00 */
    default:
        return (offset_shape){5, 3, 0, false}; /* -0700 */
    }
}

/* "-0700" and the other numeric offsets; the "Z07", "Z0700" and "Z07:00" forms also take "Z"
 * for UTC. The parts are read with Go's atoi, so a sign inside passes ("+-100"). */
static bool parse_offset(tparse *p)
{
    pstr *v = &p->value;
    int s = p->elem.std;
    if ((s == STD_ISO_TZ || s == STD_ISO_SHORT_TZ || s == STD_ISO_COLON_TZ) && v->n >= 1 &&
        v->s[0] == 'Z') {
        adv(v, 1);
        p->z_utc = true;
        return true;
    }
    offset_shape sh = offset_shape_of(s);
    if (v->n < sh.len || (sh.colons && (v->s[3] != ':' || (sh.ss && v->s[6] != ':')))) {
        return false;
    }
    int64_t h = 0, m = 0, sec = 0;
    bool ok = patoi(v->s + 1, 2, &h) && (!sh.mm || patoi(v->s + sh.mm, 2, &m)) &&
              (!sh.ss || patoi(v->s + sh.ss, 2, &sec));
    p->zone_off = (int32_t)((h * 60 + m) * 60 + sec);
    if (v->s[0] == '-') {
        p->zone_off = -p->zone_off;
    } else if (v->s[0] != '+') {
        ok = false;
    }
    adv(v, sh.len);
    p->have_off = true;
    return ok;
}

/* The parser of each layout element next_chunk finds. */
static field_parser *const field_parsers[] = {
    [STD_NONE] = NULL,
    [STD_LONG_MONTH] = parse_month_name,
    [STD_MONTH] = parse_month_name,
    [STD_NUM_MONTH] = parse_month_number,
    [STD_ZERO_MONTH] = parse_month_number,
    [STD_LONG_WEEKDAY] = parse_weekday,
    [STD_WEEKDAY] = parse_weekday,
    [STD_DAY] = parse_day,
    [STD_UNDER_DAY] = parse_day,
    [STD_ZERO_DAY] = parse_day,
    [STD_UNDER_YEARDAY] = parse_year_day,
    [STD_ZERO_YEARDAY] = parse_year_day,
    [STD_HOUR] = parse_hour,
    [STD_HOUR12] = parse_hour12,
    [STD_ZERO_HOUR12] = parse_hour12,
    [STD_MINUTE] = parse_minute,
    [STD_ZERO_MINUTE] = parse_minute,
    [STD_SECOND] = parse_second,
    [STD_ZERO_SECOND] = parse_second,
    [STD_LONG_YEAR] = parse_year4,
    [STD_YEAR] = parse_year2,
    [STD_PM] = parse_am_pm,
    [STD_PM_LOWER] = parse_am_pm,
    [STD_TZ] = parse_zone_name,
    [STD_ISO_TZ] = parse_offset,
    [STD_ISO_SECONDS_TZ] = parse_offset,
    [STD_ISO_SHORT_TZ] = parse_offset,
    [STD_ISO_COLON_TZ] = parse_offset,
    [STD_ISO_COLON_SECONDS_TZ] = parse_offset,
    [STD_NUM_TZ] = parse_offset,
    [STD_NUM_SECONDS_TZ] = parse_offset,
    [STD_NUM_SHORT_TZ] = parse_offset,
    [STD_NUM_COLON_TZ] = parse_offset,
    [STD_NUM_COLON_SECONDS_TZ] = parse_offset,
    [STD_FRAC0] = parse_frac0,
    [STD_FRAC9] = parse_frac9,
};
_Static_assert(CO_ARRAY_SIZE(field_parsers) == STD_FRAC9 + 1, "a parser for every element");

/* ---- parsing: the layout, then the assembly ----------------------------------------------- */

/* Walks the layout element by element: the literal text before each must match the value
 * (spaces matching any run of spaces), then the element's parser reads its field, until the
 * layout ends, where the value must end too. On a mismatch fills @e as Go's ParseError and
 * returns false. */
static bool read_fields(tparse *p, perr *e)
{
    for (;;) {
        chunk c = next_chunk(p->layout.s, p->layout.n);
        const char *elem = p->layout.s + c.prefix;
        if (!skip_prefix(&p->value, p->layout.s, c.prefix)) {
            e->elem = p->layout.s;
            e->elem_len = c.prefix;
            e->value = p->value;
            return false;
        }
        if (c.std == STD_NONE) {
            if (p->value.n != 0) {
                e->value = p->value;
                e->msg = ": extra text: ";
                e->msg_quote_val = true;
                return false;
            }
            return true;
        }
        adv(&p->layout, c.prefix + c.len);
        p->elem = c;
        bool ok = field_parsers[c.std](p);
        if (p->range) {
            e->value = p->value;
            e->msg = p->range;
            return false;
        }
        if (!ok) {
            e->elem = elem;
            e->elem_len = c.len;
            e->value = p->value;
            return false;
        }
    }
}

/* The date from the fields: the 12-hour clock applied, a day of the year turned into a
 * month and day (which must agree with any also given), missing ones 1, and the day checked
 * against its month. Returns Go's range message, or NULL. */
static const char *resolve_date(tparse *p)
{
    static const int before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
    if (p->pm && p->hour < 12) {
        p->hour += 12;
    } else if (p->am && p->hour == 12) {
        p->hour = 0;
    }
    if (p->yday < 0) {
        p->month = p->month < 0 ? 1 : p->month;
        p->day = p->day < 0 ? 1 : p->day;
    } else {
        int yday = p->yday;
        int d = 0;
        int m = 0;
        if (is_leap(p->year)) {
            if (yday == 31 + 29) {
                m = 2;
                d = 29;
            } else if (yday > 31 + 29) {
                yday--;
            }
        }
        if (yday < 1 || yday > 365) {
            return ": day-of-year out of range";
        }
        if (m == 0) {
            m = (yday - 1) / 31 + 1;
            if (before[m] < yday) {
                m++;
            }
            d = yday - before[m - 1];
        }
        if (p->month >= 0 && p->month != m) {
            return ": day-of-year does not match month";
        }
        p->month = m;
        if (p->day >= 0 && p->day != d) {
            return ": day-of-year does not match day";
        }
        p->day = d;
    }
    if (p->day < 1 || p->day > days_in(p->month, p->year)) {
        return ": day out of range";
    }
    return NULL;
}

/* The fields' wall clock read as UTC, in seconds since 1970. */
static int64_t wall_seconds(const tparse *p)
{
    return days_from_civil(p->year, p->month, p->day) * SECS_PER_DAY +
           clock_secs(p->hour, p->min, p->sec);
}

/* A numeric offset: @loc when it has that offset then (and the parsed name, if any), else a
 * fixed zone recording the offset and name. */
static tv time_at_offset(tpl_x *x, const tparse *p, const char *zname, const tpl_zone *loc)
{
    int64_t unix = wall_seconds(p) - p->zone_off;
    zone_at za = zone_lookup(x, loc, unix);
    if (za.off == p->zone_off && (!zname || strcmp(za.abbr, zname) == 0)) {
        return time_value(x, unix, p->nsec, loc, INT64_MIN);
    }
    return time_value(x, unix, p->nsec, zone_fixed(x, zname ? zname : "", p->zone_off), INT64_MIN);
}

/* A zone abbreviation alone, as Go's lookupName: a zone of @loc of that name in effect then,
 * else any zone of @loc of that name, else a fixed zone of that name at offset 0 ("GMT+3":
 * at that offset). */
static tv time_in_named_zone(tpl_x *x, const tparse *p, const char *zname, const tpl_zone *loc)
{
    int64_t unix = wall_seconds(p);
    if (loc) {
        for (size_t i = 0; i < loc->ntypes; i++) {
            if (strcmp(loc->types[i].abbr, zname) == 0) {
                zone_at za = zone_lookup(x, loc, unix - loc->types[i].off);
                if (strcmp(za.abbr, zname) == 0) {
                    return time_value(x, unix - za.off, p->nsec, loc, INT64_MIN);
                }
            }
        }
        for (size_t i = 0; i < loc->ntypes; i++) {
            if (strcmp(loc->types[i].abbr, zname) == 0) {
                return time_value(x, unix - loc->types[i].off, p->nsec, loc, INT64_MIN);
            }
        }
    }
    int64_t off = 0;
    if (p->zone_name_len > 3 && memcmp(zname, "GMT", 3) == 0) {
        (void)patoi(zname + 3, p->zone_name_len - 3, &off);
        off *= 3600;
    }
    return time_value(x, unix, p->nsec, zone_fixed(x, zname, (int32_t)off), INT64_MIN);
}

/* The time of complete, checked fields, in the zone they name: UTC wins, then a numeric
 * offset, then an abbreviation, else @loc. */
static tv parsed_time(tpl_x *x, const tparse *p, const tpl_zone *loc)
{
    if (p->z_utc) {
        return time_date(x, p->year, p->month, p->day, p->hour, p->min, p->sec, p->nsec, NULL);
    }
    char *zname = NULL;
    if (p->zone_name) {
        zname = tpl_alloc(x, p->zone_name_len + 1);
        memcpy(zname, p->zone_name, p->zone_name_len);
        zname[p->zone_name_len] = '\0';
    }
    if (p->have_off) {
        return time_at_offset(x, p, zname, loc);
    }
    if (zname) {
        return time_in_named_zone(x, p, zname, loc);
    }
    return time_date(x, p->year, p->month, p->day, p->hour, p->min, p->sec, p->nsec, loc);
}

/* Go's ParseInLocation(layout, value, loc): the fields read along the layout, the date
 * resolved and checked, then the time made in its zone. */
static int time_parse(tpl_x *x,
                      tv *out,
                      const char *layout,
                      size_t ln,
                      const char *value,
                      size_t vn,
                      const tpl_zone *loc)
{
    tparse p = {
        .layout = {layout, ln},
        .value = {value, vn},
        .month = -1,
        .day = -1,
        .yday = -1,
        .zone_off = -1,
    };
    perr e;
    memset(&e, 0, sizeof(e));
    if (!read_fields(&p, &e)) {
        return parse_fail(x, layout, ln, value, vn, &e);
    }
    e.value = p.value;
    e.msg = resolve_date(&p);
    if (e.msg) {
        return parse_fail(x, layout, ln, value, vn, &e);
    }
    *out = parsed_time(x, &p, loc);
    return 0;
}

/* ---- durations and arithmetic ------------------------------------------------------------- */

/* Go's Time.Add: the monotonic reading moves along unless it would overflow. */
static tv time_add(tpl_x *x, const tv_time *t, int64_t d)
{
    int64_t dsec = d / 1000000000;
    int64_t nsec = t->nsec + d % 1000000000;
    if (nsec >= 1000000000) {
        dsec++;
        nsec -= 1000000000;
    } else if (nsec < 0) {
        dsec--;
        nsec += 1000000000;
    }
    int64_t mono = t->mono;
    if (mono != INT64_MIN) {
        int64_t te;
        if (__builtin_add_overflow(mono, d, &te) || te == INT64_MIN) {
            mono = INT64_MIN;
        } else {
            mono = te;
        }
    }
    return time_value(x, (int64_t)((uint64_t)t->sec + (uint64_t)dsec), (int32_t)nsec, t->loc, mono);
}

/* Go's time.Since(t): now - t in nanoseconds, saturated. */
static int64_t time_since(const tv_time *t)
{
    if (t->mono != INT64_MIN) {
        int64_t d;
        if (!__builtin_sub_overflow(mono_now(), t->mono, &d)) {
            return d;
        }
    }
    int64_t now = co_time_now();
    int64_t now_sec = floor_div(now, 1000000000);
    int64_t now_nsec = now - now_sec * 1000000000;
    int64_t dsec;
    int64_t d;
    if (__builtin_sub_overflow(now_sec, t->sec, &dsec) ||
        __builtin_mul_overflow(dsec, (int64_t)1000000000, &d) ||
        __builtin_add_overflow(d, now_nsec - t->nsec, &d)) {
        return dsec < 0 || now_sec < t->sec ? INT64_MIN : INT64_MAX;
    }
    return d;
}

/* Go's Duration.Round(m). */
static int64_t duration_round(int64_t d, int64_t m)
{
    int64_t r = d % m;
    if (d < 0) {
        r = -r;
        if ((uint64_t)r + (uint64_t)r < (uint64_t)m) {
            return d + r;
        }
        int64_t d1;
        if (!__builtin_add_overflow(d - m, r, &d1) && d1 < d) {
            return d1;
        }
        return INT64_MIN;
    }
    if ((uint64_t)r + (uint64_t)r < (uint64_t)m) {
        return d - r;
    }
    int64_t d1;
    if (!__builtin_add_overflow(d, m - r, &d1) && d1 > d) {
        return d1;
    }
    return INT64_MAX;
}

/* ---- time.Time methods -------------------------------------------------------------------- */

static civil civil_of(const tv *v)
{
    const tv_time *t = tm_of(v);
    return civil_from_local(t->sec + t->off);
}

static int m_string(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, time_string(&b, tm_of(&a[0])));
}

static int m_format(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, time_format(&b, tm_of(&a[0]), a[1].u.s->s, a[1].u.s->len));
}

static int m_unix(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT64, tm_of(&a[0])->sec);
    return 0;
}

static int64_t scaled(const tv_time *t, int64_t per_sec)
{
    /* Go's UnixNano and friends wrap around outside their range */
    return (int64_t)((uint64_t)t->sec * (uint64_t)per_sec +
                     (uint64_t)(t->nsec / (1000000000 / per_sec)));
}

static int m_unix_nano(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT64, scaled(tm_of(&a[0]), 1000000000));
    return 0;
}

static int m_unix_micro(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT64, scaled(tm_of(&a[0]), 1000000));
    return 0;
}

static int m_unix_milli(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT64, scaled(tm_of(&a[0]), 1000));
    return 0;
}

static int m_year(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).year);
    return 0;
}

static int m_month(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_MONTH, civil_of(&a[0]).month);
    return 0;
}

static int m_day(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).day);
    return 0;
}

static int m_hour(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).hour);
    return 0;
}

static int m_minute(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).min);
    return 0;
}

static int m_second(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).sec);
    return 0;
}

static int m_nanosecond(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, tm_of(&a[0])->nsec);
    return 0;
}

static int m_year_day(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_INT, civil_of(&a[0]).yday);
    return 0;
}

static int m_weekday(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    *ret = tv_int(&T_WEEKDAY, civil_of(&a[0]).wday);
    return 0;
}

static int m_is_zero(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)x, (void)n;
    const tv_time *t = tm_of(&a[0]);
    *ret = tv_bool(t->sec == ZERO_UNIX && t->nsec == 0);
    return 0;
}

static int m_utc(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_time *t = tm_of(&a[0]);
    *ret = time_value(x, t->sec, t->nsec, NULL, INT64_MIN);
    return 0;
}

static int m_month_string(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t m = a[0].u.i;
    if (m >= 1 && m <= 12) {
        *ret = tv_cstring(x, long_months[m - 1]);
    } else {
        char buf[48];
        snprintf(buf, sizeof(buf), "%%!Month(%lld)", (long long)m);
        *ret = tv_cstring(x, buf);
    }
    return 0;
}

static int m_weekday_string(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t d = a[0].u.i;
    if (d >= 0 && d <= 6) {
        *ret = tv_cstring(x, long_days[d]);
    } else {
        char buf[48];
        snprintf(buf, sizeof(buf), "%%!Weekday(%lld)", (long long)d);
        *ret = tv_cstring(x, buf);
    }
    return 0;
}

static const tv_type *const P_TIME[] = {&T_TIME};
static const tv_type *const P_MONTH[] = {&T_MONTH};
static const tv_type *const P_WEEKDAY[] = {&T_WEEKDAY};

static const tpl_func time_methods[] = {
    TPL_FUNC("Day", m_day, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("Format", m_format, SP_S, 1, false, false, &T_STRING),
    TPL_FUNC("Hour", m_hour, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("IsZero", m_is_zero, P_TIME, 0, false, false, &T_BOOL),
    TPL_FUNC("Minute", m_minute, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("Month", m_month, P_TIME, 0, false, false, &T_MONTH),
    TPL_FUNC("Nanosecond", m_nanosecond, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("Second", m_second, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("String", m_string, P_TIME, 0, false, false, &T_STRING),
    TPL_FUNC("UTC", m_utc, P_TIME, 0, false, false, &T_TIME),
    TPL_FUNC("Unix", m_unix, P_TIME, 0, false, false, &T_INT64),
    TPL_FUNC("UnixMicro", m_unix_micro, P_TIME, 0, false, false, &T_INT64),
    TPL_FUNC("UnixMilli", m_unix_milli, P_TIME, 0, false, false, &T_INT64),
    TPL_FUNC("UnixNano", m_unix_nano, P_TIME, 0, false, false, &T_INT64),
    TPL_FUNC("Weekday", m_weekday, P_TIME, 0, false, false, &T_WEEKDAY),
    TPL_FUNC("Year", m_year, P_TIME, 0, false, false, &T_INT),
    TPL_FUNC("YearDay", m_year_day, P_TIME, 0, false, false, &T_INT),
};

static const tpl_func month_methods[] = {
    TPL_FUNC("String", m_month_string, P_MONTH, 0, false, false, &T_STRING),
};

static const tpl_func weekday_methods[] = {
    TPL_FUNC("String", m_weekday_string, P_WEEKDAY, 0, false, false, &T_STRING),
};

/* ---- sprig functions ---------------------------------------------------------------------- */

/* sprig's date argument: a time, or int/int32/int64 seconds since the epoch; anything else is
 * now. @unix_int32 says whether int32 counts (ago does not take it). */
static tv date_arg(tpl_x *x, const tv *v, bool with_int32)
{
    if (tpl_is_time(v)) {
        if (v->t == &T_TIME) {
            return *v;
        }
        if (!v->u.o) {
            return time_now(x); /* a nil *time.Time: Go would panic; not reachable here */
        }
        tv r = {&T_TIME, {.o = v->u.o}};
        return r;
    }
    if (v->t == &T_INT64 || v->t == &T_INT || (with_int32 && v->t == &T_INT32)) {
        return time_value(x, v->u.i, 0, zone_local(x), INT64_MIN);
    }
    return time_now(x);
}

static int date_in_zone(tpl_x *x, tv *ret, const tv_str *fmt, const tv *date, const char *zone)
{
    tv t = date_arg(x, date, true);
    const tpl_zone *loc = NULL;
    if (!zone_load(x, zone, &loc)) {
        loc = NULL;
    }
    const tv_time *tt = tm_of(&t);
    tv in = time_value(x, tt->sec, tt->nsec, loc, INT64_MIN);
    co_buf b = OUT_INIT;
    return sp_ret_buf(x, ret, &b, time_format(&b, tm_of(&in), fmt->s, fmt->len));
}

static int fn_date(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return date_in_zone(x, ret, a[0].u.s, &a[1], "Local");
}

static int fn_date_in_zone(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return date_in_zone(x, ret, a[0].u.s, &a[1], sp_cstr(a[2].u.s));
}

static const tv_str html_layout = {10, "2006-01-02"};

static int fn_html_date(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return date_in_zone(x, ret, &html_layout, &a[0], "Local");
}

static int fn_html_date_in_zone(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    return date_in_zone(x, ret, &html_layout, &a[0], sp_cstr(a[1].u.s));
}

static int fn_date_modify(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t d;
    if (co_duration_parse(&d, sp_cstr(a[0].u.s)) < 0) {
        *ret = a[1];
        return 0;
    }
    *ret = time_add(x, tm_of(&a[1]), d);
    return 0;
}

static int fn_must_date_modify(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t d;
    if (co_duration_parse(&d, sp_cstr(a[0].u.s)) < 0) {
        return tpl_fail(x, "%s", co_error_last());
    }
    *ret = time_add(x, tm_of(&a[1]), d);
    return 0;
}

static int fn_now(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)a, (void)n;
    *ret = time_now(x);
    return 0;
}

static int fn_to_date(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *l = a[0].u.s;
    const tv_str *v = a[1].u.s;
    if (time_parse(x, ret, l->s, l->len, v->s, v->len, zone_local(x)) < 0) {
        co_buf_reset(x->err);
        *ret = time_value(x, ZERO_UNIX, 0, NULL, INT64_MIN);
    }
    return 0;
}

static int fn_must_to_date(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    const tv_str *l = a[0].u.s;
    const tv_str *v = a[1].u.s;
    return time_parse(x, ret, l->s, l->len, v->s, v->len, zone_local(x));
}

static int fn_unix_epoch(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)tm_of(&a[0])->sec);
    *ret = tv_cstring(x, buf);
    return 0;
}

static int fn_ago(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    tv t = date_arg(x, &a[0], false);
    char buf[CO_DURATION_STR_MAX];
    size_t len = co_duration_format(buf, duration_round(time_since(tm_of(&t)), CO_SECOND));
    *ret = tv_string(x, buf, len);
    return 0;
}

/* duration SECONDS: a string (base 10) or an int64 of seconds as a Go duration */
static int fn_duration(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t secs = 0;
    if (a[0].t == &T_STRING) {
        if (co_strconv_parse_int(&secs, a[0].u.s->s, a[0].u.s->len, 10, 0) != 0) {
            secs = 0;
        }
    } else if (a[0].t == &T_INT64) {
        secs = a[0].u.i;
    }
    char buf[CO_DURATION_STR_MAX];
    size_t len = co_duration_format(buf, (int64_t)((uint64_t)secs * 1000000000ULL));
    *ret = tv_string(x, buf, len);
    return 0;
}

/* durationRound: the largest whole unit of a duration (string, int64 nanoseconds, or the time
 * since a time.Time) */
static int fn_duration_round(tpl_x *x, tv *ret, tv *a, size_t n)
{
    (void)n;
    int64_t d = 0;
    if (a[0].t == &T_STRING) {
        if (co_duration_parse(&d, sp_cstr(a[0].u.s)) < 0) {
            d = 0;
        }
    } else if (a[0].t == &T_INT64) {
        d = a[0].u.i;
    } else if (a[0].t == &T_TIME) {
        d = time_since(tm_of(&a[0]));
    }
    uint64_t u = (uint64_t)d;
    if (d < 0) {
        u = 0 - u;
    }
    static const struct {
        uint64_t unit;
        const char *suffix;
    } units[] = {
        {3600ULL * 24 * 365 * 1000000000ULL, "y"},
        {3600ULL * 24 * 30 * 1000000000ULL, "mo"},
        {3600ULL * 24 * 1000000000ULL, "d"},
        {3600ULL * 1000000000ULL, "h"},
        {60ULL * 1000000000ULL, "m"},
        {1000000000ULL, "s"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(units); i++) {
        if (u > units[i].unit) {
            char buf[32];
            snprintf(buf, sizeof(buf), "%llu%s", (unsigned long long)(u / units[i].unit),
                     units[i].suffix);
            *ret = tv_cstring(x, buf);
            return 0;
        }
    }
    *ret = tv_cstring(x, "0s");
    return 0;
}

static const tv_type *const P_SAS[] = {&T_STRING, &T_IFACE, &T_STRING};
static const tv_type *const P_AS[] = {&T_IFACE, &T_STRING};
static const tv_type *const P_ST[] = {&T_STRING, &T_TIME};
static const tv_type *const P_T[] = {&T_TIME};

static const tpl_func funcs[] = {
    TPL_FUNC("ago", fn_ago, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("date", fn_date, SP_SA, 2, false, false, &T_STRING),
    TPL_FUNC("dateInZone", fn_date_in_zone, P_SAS, 3, false, false, &T_STRING),
    TPL_FUNC("dateModify", fn_date_modify, P_ST, 2, false, false, &T_TIME),
    TPL_FUNC("date_in_zone", fn_date_in_zone, P_SAS, 3, false, false, &T_STRING),
    TPL_FUNC("date_modify", fn_date_modify, P_ST, 2, false, false, &T_TIME),
    TPL_FUNC("duration", fn_duration, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("durationRound", fn_duration_round, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("htmlDate", fn_html_date, SP_A, 1, false, false, &T_STRING),
    TPL_FUNC("htmlDateInZone", fn_html_date_in_zone, P_AS, 2, false, false, &T_STRING),
    TPL_FUNC("mustDateModify", fn_must_date_modify, P_ST, 2, false, true, &T_TIME),
    TPL_FUNC("mustToDate", fn_must_to_date, SP_S, 2, false, true, &T_TIME),
    TPL_FUNC("must_date_modify", fn_must_date_modify, P_ST, 2, false, true, &T_TIME),
    TPL_FUNC("now", fn_now, SP_S, 0, false, false, &T_TIME),
    TPL_FUNC("toDate", fn_to_date, SP_S, 2, false, false, &T_TIME),
    TPL_FUNC("unixEpoch", fn_unix_epoch, P_T, 1, false, false, &T_STRING),
};

void tpl_register_sprig_date(co_template_funcs *f)
{
    tpl_register_all(f, funcs, CO_ARRAY_SIZE(funcs));
}
