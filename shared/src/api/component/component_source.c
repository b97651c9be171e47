/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bridge from the API model to the source layer: the parsed `spec.sourceRef` of a
 * co_component becomes the co_source_spec the source layer resolves and fetches. It lives on
 * the model's side because the source layer below must not know the model's types.
 */
#include "co/api/component.h"

#include <string.h>

#include "co/source/git.h"
#include "co/util/duration.h"
#include "co/source/source.h"
#include "co/util/error.h"

static int nonempty(const char *s)
{
    return s && *s;
}

int co_source_spec_from_ref(co_source_spec *out, const co_source_ref *ref)
{
    co_source_spec r;
    memset(&r, 0, sizeof(r));
    if (!ref || ref->kind == CO_SOURCE_NONE || ref->nkinds != 1) {
        return co_error_set(CO_EINVALID,
                            "sourceRef: exactly one of fluxGitRepository, fluxOciRepository, "
                            "fluxBucket, fluxHelmChart, httpRepository, git or blueprint must "
                            "be set");
    }
    r.kind = ref->kind;
    switch (r.kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        r.url = ref->http.url;
        r.digest_header = ref->http.digest_header;
        r.revision_header = ref->http.revision_header;
        if (!nonempty(r.url)) {
            return co_error_set(CO_EINVALID, "sourceRef.httpRepository.url: required");
        }
        break;
    case CO_SOURCE_GIT: {
        const co_git_source *g = &ref->git;
        r.url = g->url;
        r.git.branch = g->branch;
        r.git.tag = g->tag;
        r.git.semver = g->semver;
        r.git.commit = g->commit;
        r.secret_name = g->secret_name;
        if (!nonempty(r.url)) {
            return co_error_set(CO_EINVALID, "sourceRef.git.url: required");
        }
        int n = nonempty(r.git.tag) + nonempty(r.git.semver) + nonempty(r.git.commit) +
                (nonempty(r.git.branch) && !nonempty(r.git.commit));
        if (n > 1) {
            return co_error_set(CO_EINVALID, "sourceRef.git.ref: set one of branch, tag, semver "
                                             "or commit (a commit may name its branch)");
        }
        if (g->interval.text) {
            if (g->interval.ns < CO_SECOND || g->interval.ns > 168 * CO_HOUR) {
                return co_error_set(CO_EINVALID,
                                    "sourceRef.git.interval: '%s' must be between 1s and 168h",
                                    g->interval.text);
            }
            r.interval_ms = (long)(g->interval.ns / CO_MILLISECOND);
        }
        co_git_ref gr = r.git;
        if (co_git_validate(r.url, &gr) < 0) {
            return co_error_wrap("sourceRef.git");
        }
        break;
    }
    default:
        r.ns = ref->flux.ns && *ref->flux.ns ? ref->flux.ns : NULL;
        r.name = ref->flux.name;
        if (!nonempty(r.name)) {
            return co_error_set(CO_EINVALID, "sourceRef.%s.name: required",
                                co_source_kind_name(r.kind));
        }
        break;
    }
    *out = r;
    return 0;
}
