/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Render budgets (see co/util/budget.h): one thread-local record of the budget in force, the
 * process-wide default limits, and an estimate of what json-c holds for a decoded document.
 */
#include "co/util/budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"

typedef struct budget {
    int depth;         /* nesting of co_budget_begin() */
    uint64_t id;       /* 0 while none is in force */
    int64_t cpu_start; /* thread CPU clock when the budget began */
    int64_t cpu_limit;
    size_t mem_limit;
    size_t mem_used;
    unsigned ticks;
    int exceeded; /* 0, CO_ETIMEOUT or CO_ETOOBIG; never cleared while in force */
} budget;

static _Thread_local budget tl;
static co_budget_limits defaults = {CO_DEFAULT_RENDER_CPU, CO_DEFAULT_RENDER_MEMORY};
static atomic_uint_fast64_t next_id = 1;

void co_budget_set_default(const co_budget_limits *limits)
{
    defaults.cpu_ns = limits && limits->cpu_ns > 0 ? limits->cpu_ns : CO_DEFAULT_RENDER_CPU;
    defaults.memory = limits && limits->memory > 0 ? limits->memory : CO_DEFAULT_RENDER_MEMORY;
}

co_budget_limits co_budget_default(void)
{
    return defaults;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0;
    }
    return (int64_t)ts.tv_sec * CO_SECOND + ts.tv_nsec;
}

void co_budget_begin(const co_budget_limits *limits)
{
    if (tl.depth++ > 0) {
        return;
    }
    co_budget_limits d = defaults;
    tl.id = atomic_fetch_add(&next_id, 1);
    tl.cpu_limit = limits && limits->cpu_ns > 0 ? limits->cpu_ns : d.cpu_ns;
    tl.mem_limit = limits && limits->memory > 0 ? limits->memory : d.memory;
    tl.mem_used = 0;
    tl.ticks = 0;
    tl.exceeded = 0;
    tl.cpu_start = thread_cpu_ns();
}

void co_budget_end(void)
{
    CO_ASSERT(tl.depth > 0);
    if (--tl.depth == 0) {
        memset(&tl, 0, sizeof(tl));
    }
}

bool co_budget_active(void)
{
    return tl.depth > 0;
}

/* "64 MiB", "1536 KiB", "1000000 bytes": the limit as it was most likely written. */
static void format_bytes(char *out, size_t size, size_t n)
{
    if (n >= CO_MIB && n % CO_MIB == 0) {
        snprintf(out, size, "%zu MiB", n / CO_MIB);
    } else if (n >= CO_KIB && n % CO_KIB == 0) {
        snprintf(out, size, "%zu KiB", n / CO_KIB);
    } else {
        snprintf(out, size, "%zu bytes", n);
    }
}

/* Sets the message of the sticky state again: callers may have replaced it since. */
static int fail(void)
{
    if (tl.exceeded == CO_ETIMEOUT) {
        char d[CO_DURATION_STR_MAX];
        co_duration_format(d, tl.cpu_limit);
        return co_error_set(CO_ETIMEOUT, "render budget exceeded: more than %s of CPU time", d);
    }
    char b[48];
    format_bytes(b, sizeof(b), tl.mem_limit);
    return co_error_set(CO_ETOOBIG,
                        "render budget exceeded: more than %s of memory for template values, "
                        "rendered output and decoded documents",
                        b);
}

int co_budget_status(void)
{
    return tl.exceeded ? fail() : 0;
}

int co_budget_check(void)
{
    if (tl.depth == 0) {
        return 0;
    }
    if (!tl.exceeded && thread_cpu_ns() - tl.cpu_start > tl.cpu_limit) {
        tl.exceeded = CO_ETIMEOUT;
    }
    return co_budget_status();
}

int co_budget_tick(void)
{
    if (tl.exceeded) {
        return fail();
    }
    if (tl.depth == 0 || ++tl.ticks % CO_BUDGET_TICKS != 0) {
        return 0;
    }
    return co_budget_check();
}

int co_budget_charge(size_t bytes)
{
    if (tl.depth == 0) {
        return 0;
    }
    tl.mem_used = bytes > SIZE_MAX - tl.mem_used ? SIZE_MAX : tl.mem_used + bytes;
    if (!tl.exceeded && tl.mem_used > tl.mem_limit) {
        tl.exceeded = CO_ETOOBIG;
    }
    return co_budget_status();
}

int co_budget_refuse(size_t bytes)
{
    if (tl.depth == 0) {
        /* without a budget only the caller's own cap can refuse; report it as such */
        return co_error_set(CO_ETOOBIG, "allocation of %zu bytes refused", bytes);
    }
    if (!tl.exceeded) {
        tl.exceeded = CO_ETOOBIG;
    }
    return fail();
}

void co_budget_release(uint64_t id, size_t bytes)
{
    if (id == 0 || id != tl.id) {
        return;
    }
    tl.mem_used = bytes < tl.mem_used ? tl.mem_used - bytes : 0;
}

uint64_t co_budget_id(void)
{
    return tl.id;
}

size_t co_budget_used(void)
{
    return tl.mem_used;
}

size_t co_budget_memory_left(void)
{
    if (tl.depth == 0) {
        return SIZE_MAX;
    }
    return tl.mem_used < tl.mem_limit ? tl.mem_limit - tl.mem_used : 0;
}

size_t co_budget_memory_limit(void)
{
    return tl.depth == 0 ? SIZE_MAX : tl.mem_limit;
}

/* What json-c allocates per value (measured with json-c 0.16 on 64-bit glibc, malloc overhead
 * included): a scalar's json_object, a string's text, an array's element vector (at least 32
 * slots) and an object's hash table of 16 slots, which makes an empty object the most expensive
 * value by far. Kubernetes manifests take 7 to 20 times their YAML text. */
enum {
    JSON_SCALAR_BYTES = 64,
    JSON_ARRAY_BYTES = 96,
    JSON_ARRAY_SLOT_BYTES = 8,
    JSON_ARRAY_MIN_SLOTS = 32,
    JSON_OBJECT_BYTES = 800,
    JSON_MEMBER_BYTES = 48,
};

/* Documents are at most CO_MAX_NESTING deep (the parsers refuse deeper ones), so the recursion
 * is bounded; deeper trees built by hand are counted to that depth only. */
static size_t json_size(const struct json_object *j, int depth)
{
    if (!j) {
        return 0;
    }
    switch (json_object_get_type(j)) {
    case json_type_string:
        return JSON_SCALAR_BYTES + (size_t)json_object_get_string_len(j);
    case json_type_array: {
        size_t n = json_object_array_length(j);
        size_t sum = JSON_ARRAY_BYTES +
                     (n > JSON_ARRAY_MIN_SLOTS ? n : JSON_ARRAY_MIN_SLOTS) * JSON_ARRAY_SLOT_BYTES;
        for (size_t i = 0; i < n && depth < CO_MAX_NESTING; i++) {
            sum += json_size(json_object_array_get_idx(j, i), depth + 1);
        }
        return sum;
    }
    case json_type_object: {
        size_t sum = JSON_OBJECT_BYTES;
        json_object_object_foreach ((struct json_object *)j, key, val) {
            sum += JSON_MEMBER_BYTES + strlen(key);
            if (depth < CO_MAX_NESTING) {
                sum += json_size(val, depth + 1);
            }
        }
        return sum;
    }
    default:
        return JSON_SCALAR_BYTES;
    }
}

int co_budget_charge_json(const struct json_object *obj, size_t *charged)
{
    size_t n = tl.depth == 0 ? 0 : json_size(obj, 0);
    if (charged) {
        *charged = n;
    }
    return co_budget_charge(n);
}

int co_budget_parse_bytes(uint64_t *out, const char *what, const char *str)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"k", 1000ULL},
        {"M", 1000ULL * 1000},
        {"G", 1000ULL * 1000 * 1000},
        {"T", 1000ULL * 1000 * 1000 * 1000},
        {"Ki", 1024ULL},
        {"Mi", 1024ULL * 1024},
        {"Gi", 1024ULL * 1024 * 1024},
        {"Ti", 1024ULL * 1024 * 1024 * 1024},
    };
    const char *p = str;
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (p == str) {
        return co_error_set(CO_EINVALID, "%s: invalid size \"%s\" (examples: 64Mi, 1Gi, 500M)",
                            what, str);
    }
    errno = 0;
    char *end = NULL;
    uintmax_t n = strtoumax(str, &end, 10);
    if (errno != 0 || end != p) {
        return co_error_set(CO_EINVALID, "%s: size \"%s\" is out of range", what, str);
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(units); i++) {
        if (strcmp(p, units[i].suffix) == 0) {
            if (n > UINT64_MAX / units[i].mult) {
                return co_error_set(CO_EINVALID, "%s: size \"%s\" is out of range", what, str);
            }
            *out = (uint64_t)n * units[i].mult;
            return 0;
        }
    }
    return co_error_set(CO_EINVALID,
                        "%s: unknown unit \"%s\" in size \"%s\" (use k, M, G, T, Ki, Mi, Gi or Ti)",
                        what, p, str);
}

int co_budget_limits_parse(co_budget_limits *out, const char *cpu, const char *memory)
{
    co_budget_limits l = {0, 0};
    if (cpu) {
        int rc = co_duration_parse(&l.cpu_ns, cpu);
        if (rc < 0) {
            return co_error_wrap("--render-cpu-budget");
        }
        if (l.cpu_ns <= 0) {
            return co_error_set(CO_EINVALID, "--render-cpu-budget: must be positive, not %s", cpu);
        }
    }
    if (memory) {
        uint64_t n = 0;
        int rc = co_budget_parse_bytes(&n, "--render-memory-budget", memory);
        if (rc < 0) {
            return rc;
        }
        if (n == 0 || n > SIZE_MAX) {
            return co_error_set(CO_EINVALID, "--render-memory-budget: must be positive, not %s",
                                memory);
        }
        l.memory = (size_t)n;
    }
    *out = l;
    return 0;
}
