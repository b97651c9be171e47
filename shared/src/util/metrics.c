/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus metrics registry (see metrics.h). Series of a family live in an array sorted by
 * their label values (value by value), so lookups are a binary search and the render order
 * falls out for free. The number of series per family in this project is small
 * (label sets are webhook paths, HTTP codes, Component names), so a sorted array beats a hash
 * table in both code size and speed.
 */
#include "co/util/metrics.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "co/util/error.h"

typedef enum kind { COUNTER, GAUGE, HISTOGRAM, GAUGE_FUNC, COUNTER_FUNC, STATE_GAUGE } kind;

typedef struct co_series series;

/* One allocation per series: the struct, then the label values' pointers, then the values
 * themselves (a thousand Components are some ten thousand series: docs/controller-performance.md,
 * "Resident memory"). */
struct co_series {
    co_metric *family;
    double value; /* counter/gauge; a state gauge's current state (index into states, -1: none) */
    double sum;   /* histogram */
    unsigned long long count;
    unsigned long long *bucket_counts; /* non-cumulative, nbuckets entries */
    const char *values[];              /* label values, into the same block */
};

struct co_metric {
    char *name;
    char *help;
    kind kind;
    char **labels;
    size_t nlabels;
    size_t nkey;   /* labels whose values name a series: nlabels, or the state's label left out */
    char **states; /* STATE_GAUGE: the states, the always rendered ones first */
    size_t nstates, nalways;
    size_t *by_name; /* STATE_GAUGE: indexes into states, in the order of the states' names */
    double *buckets;
    size_t nbuckets;
    double (*fn)(void *);
    void *payload;
    pthread_mutex_t mu;
    series **series;
    size_t nseries, cap;
};

struct co_metrics {
    pthread_mutex_t mu;
    co_metric **families;
    size_t n, cap;
};

co_metrics *co_metrics_new(void)
{
    co_metrics *reg = co_xcalloc(1, sizeof(*reg));
    pthread_mutex_init(&reg->mu, NULL);
    return reg;
}

static void free_series(series *s)
{
    free(s->bucket_counts);
    free(s);
}

void co_metrics_free(co_metrics *reg)
{
    if (!reg) {
        return;
    }
    for (size_t i = 0; i < reg->n; i++) {
        co_metric *m = reg->families[i];
        for (size_t j = 0; j < m->nseries; j++) {
            free_series(m->series[j]);
        }
        for (size_t j = 0; j < m->nlabels; j++) {
            free(m->labels[j]);
        }
        free(m->labels);
        for (size_t j = 0; j < m->nstates; j++) {
            free(m->states[j]);
        }
        free(m->states);
        free(m->by_name);
        free(m->series);
        free(m->buckets);
        free(m->name);
        free(m->help);
        pthread_mutex_destroy(&m->mu);
        free(m);
    }
    free(reg->families);
    pthread_mutex_destroy(&reg->mu);
    free(reg);
}

static co_metric *add_family(co_metrics *reg,
                             kind k,
                             const char *name,
                             const char *help,
                             const char *const *labels,
                             size_t nlabels)
{
    pthread_mutex_lock(&reg->mu);
    size_t lo = 0, hi = reg->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(reg->families[mid]->name, name);
        if (c == 0) {
            co_metric *existing = reg->families[mid];
            pthread_mutex_unlock(&reg->mu);
            return existing;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    co_metric *m = co_xcalloc(1, sizeof(*m));
    m->name = co_xstrdup(name);
    m->help = co_xstrdup(help ? help : "");
    m->kind = k;
    m->nlabels = nlabels;
    m->nkey = nlabels;
    m->labels = co_xcalloc(nlabels ? nlabels : 1, sizeof(char *));
    for (size_t i = 0; i < nlabels; i++) {
        m->labels[i] = co_xstrdup(labels[i]);
    }
    pthread_mutex_init(&m->mu, NULL);
    if (reg->n == reg->cap) {
        reg->cap = reg->cap ? reg->cap * 2 : 16;
        reg->families = co_xreallocarray(reg->families, reg->cap, sizeof(co_metric *));
    }
    memmove(&reg->families[lo + 1], &reg->families[lo], (reg->n - lo) * sizeof(co_metric *));
    reg->families[lo] = m;
    reg->n++;
    pthread_mutex_unlock(&reg->mu);
    return m;
}

co_metric *co_metrics_counter(co_metrics *reg,
                              const char *name,
                              const char *help,
                              const char *const *labels,
                              size_t nlabels)
{
    return add_family(reg, COUNTER, name, help, labels, nlabels);
}

co_metric *co_metrics_gauge(co_metrics *reg,
                            const char *name,
                            const char *help,
                            const char *const *labels,
                            size_t nlabels)
{
    return add_family(reg, GAUGE, name, help, labels, nlabels);
}

co_metric *co_metrics_histogram(co_metrics *reg,
                                const char *name,
                                const char *help,
                                const char *const *labels,
                                size_t nlabels,
                                const double *buckets,
                                size_t nbuckets)
{
    co_metric *m = add_family(reg, HISTOGRAM, name, help, labels, nlabels);
    pthread_mutex_lock(&m->mu);
    if (!m->buckets) {
        m->buckets = co_xcalloc(nbuckets ? nbuckets : 1, sizeof(double));
        memcpy(m->buckets, buckets, nbuckets * sizeof(double));
        m->nbuckets = nbuckets;
    }
    pthread_mutex_unlock(&m->mu);
    return m;
}

co_metric *co_metrics_state_gauge(co_metrics *reg,
                                  const char *name,
                                  const char *help,
                                  const char *const *labels,
                                  size_t nlabels,
                                  const char *const *states,
                                  size_t nstates,
                                  size_t nalways)
{
    CO_ASSERT(nlabels >= 1 && nalways <= nstates);
    co_metric *m = add_family(reg, STATE_GAUGE, name, help, labels, nlabels);
    pthread_mutex_lock(&m->mu);
    if (!m->states) {
        m->nkey = nlabels - 1;
        m->states = co_xcalloc(nstates ? nstates : 1, sizeof(char *));
        m->by_name = co_xcalloc(nstates ? nstates : 1, sizeof(size_t));
        for (size_t i = 0; i < nstates; i++) {
            m->states[i] = co_xstrdup(states[i]);
            /* insertion sort: a handful of states */
            size_t j = i;
            while (j > 0 && strcmp(states[m->by_name[j - 1]], states[i]) > 0) {
                m->by_name[j] = m->by_name[j - 1];
                j--;
            }
            m->by_name[j] = i;
        }
        m->nstates = nstates;
        m->nalways = nalways;
    }
    pthread_mutex_unlock(&m->mu);
    return m;
}

void co_metrics_gauge_func(co_metrics *reg,
                           const char *name,
                           const char *help,
                           double (*fn)(void *payload),
                           void *payload)
{
    co_metric *m = add_family(reg, GAUGE_FUNC, name, help, NULL, 0);
    m->fn = fn;
    m->payload = payload;
}

void co_metrics_counter_func(co_metrics *reg,
                             const char *name,
                             const char *help,
                             double (*fn)(void *payload),
                             void *payload)
{
    co_metric *m = add_family(reg, COUNTER_FUNC, name, help, NULL, 0);
    m->fn = fn;
    m->payload = payload;
}

/* ---- process metrics ------------------------------------------------------------------------ */

/* Field @p n (1-based, as in proc(5)) of /proc/self/stat as a number; 0 when unreadable. */
static double stat_field(int n)
{
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f) {
        return 0;
    }
    char line[1024];
    size_t len = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[len] = '\0';
    /* the fields after the command name, which is parenthesised and may hold spaces */
    const char *p = strrchr(line, ')');
    if (!p) {
        return 0;
    }
    p++;
    for (int field = 3; field <= n; field++) {
        while (*p == ' ') {
            p++;
        }
        if (field == n) {
            return (double)strtoull(p, NULL, 10);
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    return 0;
}

static double process_cpu(void *payload)
{
    (void)payload;
    return (stat_field(14) + stat_field(15)) / (double)sysconf(_SC_CLK_TCK);
}

static double process_rss(void *payload)
{
    (void)payload;
    return stat_field(24) * (double)sysconf(_SC_PAGESIZE);
}

static double process_vsize(void *payload)
{
    (void)payload;
    return stat_field(23);
}

static double process_start(void *payload)
{
    (void)payload;
    FILE *f = fopen("/proc/stat", "re");
    double boot = 0;
    if (f) {
        char l[256];
        while (fgets(l, sizeof(l), f)) {
            if (strncmp(l, "btime ", 6) == 0) {
                boot = (double)strtoull(l + 6, NULL, 10);
                break;
            }
        }
        fclose(f);
    }
    return boot + stat_field(22) / (double)sysconf(_SC_CLK_TCK);
}

static double process_fds(void *payload)
{
    (void)payload;
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        return 0;
    }
    long n = 0;
    /* the stream is private to this call; readdir is unsafe only on a shared one */
    for (const struct dirent *e; (e = readdir(d)) != NULL;) { // NOLINT(concurrency-mt-unsafe)
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return (double)(n - 1); /* the directory stream's own descriptor */
}

static double process_max_fds(void *payload)
{
    (void)payload;
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : 0;
}

void co_metrics_process(co_metrics *reg)
{
    co_metrics_counter_func(reg, "process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds.", process_cpu, NULL);
    co_metrics_gauge_func(reg, "process_resident_memory_bytes", "Resident memory size in bytes.",
                          process_rss, NULL);
    co_metrics_gauge_func(reg, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                          process_vsize, NULL);
    co_metrics_gauge_func(reg, "process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.", process_start,
                          NULL);
    co_metrics_gauge_func(reg, "process_open_fds", "Number of open file descriptors.", process_fds,
                          NULL);
    co_metrics_gauge_func(reg, "process_max_fds", "Maximum number of open file descriptors.",
                          process_max_fds, NULL);
}

/* Orders label value tuples as their values joined by a separator below every printable
 * character would: value by value, a shorter value (a prefix) first. */
static int compare_values(const char *const *a, const char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int c = strcmp(a[i], b[i]);
        if (c != 0) {
            return c;
        }
    }
    return 0;
}

/* A new series for @p values: the struct, the pointers and the strings in one block. */
static series *new_series(co_metric *m, const char *const *values)
{
    size_t n = m->nkey, len = 0;
    for (size_t i = 0; i < n; i++) {
        len += strlen(values[i]) + 1;
    }
    series *s = co_xcalloc(1, sizeof(*s) + n * sizeof(char *) + len);
    char *p = (char *)&s->values[n];
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(values[i]) + 1;
        memcpy(p, values[i], k);
        s->values[i] = p;
        p += k;
    }
    s->family = m;
    s->value = m->kind == STATE_GAUGE ? -1 : 0;
    return s;
}

/* Finds (or, if @p create, inserts) the series for @p values; family lock held. */
static series *find_series(co_metric *m, const char *const *values, int create, size_t *index)
{
    size_t lo = 0, hi = m->nseries;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = compare_values(m->series[mid]->values, values, m->nkey);
        if (c == 0) {
            *index = mid;
            return m->series[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (!create) {
        return NULL;
    }
    series *s = new_series(m, values);
    if (m->kind == HISTOGRAM) {
        s->bucket_counts = co_xcalloc(m->nbuckets ? m->nbuckets : 1, sizeof(unsigned long long));
    }
    if (m->nseries == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 8;
        m->series = co_xreallocarray(m->series, m->cap, sizeof(series *));
    }
    memmove(&m->series[lo + 1], &m->series[lo], (m->nseries - lo) * sizeof(series *));
    m->series[lo] = s;
    m->nseries++;
    *index = lo;
    return s;
}

/* A counter only goes up, or scrapers see a reset and invent increases; family lock held. */
static void add_value(series *s, double v)
{
    if (s->family->kind != COUNTER || v > 0) {
        s->value += v;
    }
}

void co_metric_add(co_metric *m, const char *const *values, double v)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    add_value(find_series(m, values, 1, &i), v);
    pthread_mutex_unlock(&m->mu);
}

void co_metric_inc(co_metric *m, const char *const *values)
{
    co_metric_add(m, values, 1.0);
}

void co_metric_set(co_metric *m, const char *const *values, double v)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, values, 1, &i);
    if (m->kind != COUNTER || v > s->value) {
        s->value = v;
    }
    pthread_mutex_unlock(&m->mu);
}

void co_metric_set_state(co_metric *m, const char *const *values, const char *state)
{
    CO_ASSERT(m->kind == STATE_GAUGE);
    double current = -1;
    for (size_t i = 0; i < m->nstates; i++) {
        if (strcmp(m->states[i], state) == 0) {
            current = (double)i;
            break;
        }
    }
    size_t i;
    pthread_mutex_lock(&m->mu);
    find_series(m, values, 1, &i)->value = current;
    pthread_mutex_unlock(&m->mu);
}

/* Family lock held. */
static void observe(series *s, double v)
{
    const co_metric *m = s->family;
    s->sum += v;
    s->count++;
    for (size_t b = 0; b < m->nbuckets; b++) {
        if (v <= m->buckets[b]) {
            s->bucket_counts[b]++;
            break;
        }
    }
}

void co_metric_observe(co_metric *m, const char *const *values, double v)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    observe(find_series(m, values, 1, &i), v);
    pthread_mutex_unlock(&m->mu);
}

co_series *co_metric_series(co_metric *m, const char *const *values)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, values, 1, &i);
    pthread_mutex_unlock(&m->mu);
    return s;
}

void co_series_add(co_series *s, double v)
{
    pthread_mutex_lock(&s->family->mu);
    add_value(s, v);
    pthread_mutex_unlock(&s->family->mu);
}

void co_series_observe(co_series *s, double v)
{
    pthread_mutex_lock(&s->family->mu);
    observe(s, v);
    pthread_mutex_unlock(&s->family->mu);
}

void co_metric_remove(co_metric *m, const char *const *values)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, values, 0, &i);
    if (s) {
        memmove(&m->series[i], &m->series[i + 1], (m->nseries - i - 1) * sizeof(series *));
        m->nseries--;
        free_series(s);
    }
    pthread_mutex_unlock(&m->mu);
}

double co_metric_value(co_metric *m, const char *const *values)
{
    size_t i;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, values, 0, &i);
    double v = s ? (m->kind == HISTOGRAM ? (double)s->count : s->value) : 0;
    pthread_mutex_unlock(&m->mu);
    return v;
}

/* ---- rendering ------------------------------------------------------------------------------- */

/* Go's strconv.FormatFloat(v, 'g', -1, 64) as the Prometheus client prints sample values: the
 * fewest significant digits that read back as v, in exponent form only when the decimal
 * exponent is below -4 or at least 6 (C's %g decides by the precision instead, and would print
 * 560 as "5.6e+02"). */
static int put_number(co_buf *out, double v)
{
    if (isnan(v)) {
        return co_buf_puts(out, "NaN");
    }
    if (isinf(v)) {
        return co_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    }
    char tmp[64];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(tmp, sizeof(tmp), "%.*e", digits - 1, v);
        if (strtod(tmp, NULL) == v) {
            break;
        }
    }
    snprintf(tmp, sizeof(tmp), "%.*e", digits - 1, v);
    int exp = (int)strtol(strchr(tmp, 'e') + 1, NULL, 10);
    if (exp >= -4 && exp < 6) {
        /* %f with just the digits that are significant */
        int decimals = digits - 1 - exp;
        snprintf(tmp, sizeof(tmp), "%.*f", decimals > 0 ? decimals : 0, v);
    }
    return co_buf_puts(out, tmp);
}

/* Label values escape backslash, double quote and newline; HELP escapes backslash and newline. */
static int put_escaped(co_buf *out, const char *s, int quotes)
{
    int rc = 0;
    for (; *s && rc == 0; s++) {
        if (*s == '\\') {
            rc = co_buf_puts(out, "\\\\");
        } else if (*s == '\n') {
            rc = co_buf_puts(out, "\\n");
        } else if (*s == '"' && quotes) {
            rc = co_buf_puts(out, "\\\"");
        } else {
            rc = co_buf_putc(out, *s);
        }
    }
    return rc;
}

/* The labels of a sample: @p s's values, then @p state's (a state gauge) or @p le's (a
 * histogram bucket). */
static int
put_labels(co_buf *out, const co_metric *m, const series *s, const char *state, const char *le)
{
    if (m->nlabels == 0 && !le) {
        return 0;
    }
    int rc = co_buf_putc(out, '{');
    for (size_t i = 0; i < m->nlabels && rc == 0; i++) {
        rc = co_buf_printf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
        if (rc == 0) {
            /* past the series' own values only a state gauge's state label is left */
            const char *v = i < m->nkey ? s->values[i] : state;
            rc = put_escaped(out, v ? v : "", 1);
        }
        if (rc == 0) {
            rc = co_buf_putc(out, '"');
        }
    }
    if (rc == 0 && le) {
        rc = co_buf_printf(out, "%sle=\"%s\"", m->nlabels ? "," : "", le);
    }
    if (rc == 0) {
        rc = co_buf_putc(out, '}');
    }
    return rc;
}

/* A state gauge's series: one sample per state, in the order of the states' names, 1 for the
 * current one; a state past the always rendered ones only while it is current. */
static int render_states(co_buf *out, const co_metric *m, const series *s)
{
    int rc = 0;
    for (size_t k = 0; k < m->nstates && rc == 0; k++) {
        size_t st = m->by_name[k];
        bool current = s->value == (double)st;
        if (st >= m->nalways && !current) {
            continue;
        }
        rc = co_buf_puts(out, m->name);
        if (rc == 0) {
            rc = put_labels(out, m, s, m->states[st], NULL);
        }
        if (rc == 0) {
            rc = co_buf_puts(out, current ? " 1\n" : " 0\n");
        }
    }
    return rc;
}

static int render_family(co_buf *out, co_metric *m)
{
    static const char *const type_names[] = {"counter", "gauge",   "histogram",
                                             "gauge",   "counter", "gauge"};
    int rc = co_buf_printf(out, "# HELP %s ", m->name);
    if (rc == 0) {
        rc = put_escaped(out, m->help, 0);
    }
    if (rc == 0) {
        rc = co_buf_printf(out, "\n# TYPE %s %s\n", m->name, type_names[m->kind]);
    }
    if (rc == 0 && (m->kind == GAUGE_FUNC || m->kind == COUNTER_FUNC)) {
        rc = co_buf_printf(out, "%s ", m->name);
        if (rc == 0) {
            rc = put_number(out, m->fn(m->payload));
        }
        return rc == 0 ? co_buf_putc(out, '\n') : rc;
    }
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nseries && rc == 0; i++) {
        const series *s = m->series[i];
        if (m->kind == STATE_GAUGE) {
            rc = render_states(out, m, s);
            continue;
        }
        if (m->kind != HISTOGRAM) {
            rc = co_buf_puts(out, m->name);
            if (rc == 0) {
                rc = put_labels(out, m, s, NULL, NULL);
            }
            if (rc == 0) {
                rc = co_buf_putc(out, ' ');
            }
            if (rc == 0) {
                rc = put_number(out, s->value);
            }
            if (rc == 0) {
                rc = co_buf_putc(out, '\n');
            }
            continue;
        }
        unsigned long long cumulative = 0;
        for (size_t b = 0; b <= m->nbuckets && rc == 0; b++) {
            char le[64];
            if (b < m->nbuckets) {
                co_buf tmp = CO_BUF_INIT(sizeof(le) - 1);
                cumulative += s->bucket_counts[b];
                if (put_number(&tmp, m->buckets[b]) == 0) {
                    snprintf(le, sizeof(le), "%s", co_buf_cstr(&tmp));
                }
                co_buf_dispose(&tmp);
            } else {
                snprintf(le, sizeof(le), "+Inf");
                cumulative = s->count;
            }
            rc = co_buf_printf(out, "%s_bucket", m->name);
            if (rc == 0) {
                rc = put_labels(out, m, s, NULL, le);
            }
            if (rc == 0) {
                rc = co_buf_printf(out, " %llu\n", cumulative);
            }
        }
        if (rc == 0) {
            rc = co_buf_printf(out, "%s_sum", m->name);
        }
        if (rc == 0) {
            rc = put_labels(out, m, s, NULL, NULL);
        }
        if (rc == 0) {
            rc = co_buf_putc(out, ' ');
        }
        if (rc == 0) {
            rc = put_number(out, s->sum);
        }
        if (rc == 0) {
            rc = co_buf_printf(out, "\n%s_count", m->name);
        }
        if (rc == 0) {
            rc = put_labels(out, m, s, NULL, NULL);
        }
        if (rc == 0) {
            rc = co_buf_printf(out, " %llu\n", s->count);
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int co_metrics_render(co_buf *out, co_metrics *reg)
{
    pthread_mutex_lock(&reg->mu);
    size_t n = reg->n;
    co_metric **fams = co_xcalloc(n ? n : 1, sizeof(co_metric *));
    memcpy(fams, reg->families, n * sizeof(co_metric *));
    pthread_mutex_unlock(&reg->mu);

    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = render_family(out, fams[i]);
    }
    free(fams);
    return rc;
}
