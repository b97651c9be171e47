/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file caps.h
 * Every size limit applied to data that comes from outside the process, in one place.
 *
 * A buffer or parser fed from the network, from a Component, from a source artifact or from a
 * file uses one of these caps and fails with CO_ETOOBIG beyond it. Add new caps here, never as
 * literals at the call site.
 */
#ifndef CO_CAPS_H
#define CO_CAPS_H

#define CO_KIB ((size_t)1024)
#define CO_MIB ((size_t)1024 * 1024)

/**
 * AdmissionReview request body (the webhook's default; --max-admission-body-bytes). The API
 * server reads at most 3 MiB of a write (its --max-request-bytes default) and etcd stores at
 * most 1.5 MiB a request (its own --max-request-bytes default), in the same JSON encoding the
 * review uses. A review carries object and, on UPDATE, oldObject: each at most 1.5 MiB for a
 * write that can be stored, or one object of up to 3 MiB on a CREATE (only a dry run gets
 * through with it); plus an envelope (user, groups, options) of a few KiB, given 512 KiB.
 */
#define CO_MAX_ADMISSION_BODY (3 * CO_MIB + 512 * CO_KIB)
/**
 * ConversionReview request body (the webhook's default; --max-conversion-body-bytes). The API
 * server converts a LIST in one request, every object of it that is not in the wanted version,
 * so no request limit bounds it; the webhook's memory does (its README works it out): 16 MiB
 * is thousands of typical Components, and a list past the memory budget is refused with 413.
 */
#define CO_MAX_CONVERSION_BODY (16 * CO_MIB)
/** One API server response body. */
#define CO_MAX_API_RESPONSE (512 * CO_MIB)
/** Group/versions one discovery listing reads (co_kube_client_api_resources()): one request
 * each, and a server is free to list any number; clusters serve a few dozen to a few hundred. */
#define CO_MAX_API_GROUP_VERSIONS 2000
/** One request body sent to the API server (which itself refuses bodies over 3 MiB). */
#define CO_MAX_API_REQUEST (8 * CO_MIB)
/** One line (event) of a watch stream. */
#define CO_MAX_WATCH_LINE (32 * CO_MIB)
/** A kubeconfig or other configuration file. */
#define CO_MAX_CONFIG_FILE (4 * CO_MIB)
/** One YAML or JSON document parsed from untrusted input. */
#define CO_MAX_DOCUMENT (64 * CO_MIB)
/** Nesting depth of JSON and YAML documents. */
#define CO_MAX_NESTING 512
/** Number of alias expansions in one YAML stream (billion-laughs guard). */
#define CO_MAX_YAML_ALIAS_NODES 100000
/** A message in the last-error slot (longer messages are truncated). */
#define CO_MAX_ERROR_MESSAGE (16 * CO_KIB)
/** A PEM certificate chain or private key file. */
#define CO_MAX_PEM_FILE (1 * CO_MIB)
/** One log line. */
#define CO_MAX_LOG_LINE (64 * CO_KIB)
/** One file of a source tree (kustomization, manifest, template, generator input). */
#define CO_MAX_SOURCE_FILE (16 * CO_MIB)
/** Files in one source tree handled by the kustomize and template generators. */
#define CO_MAX_SOURCE_FILES 100000
/** Nesting of kustomizations (resources, components, overlays of overlays). */
#define CO_MAX_KUSTOMIZE_DEPTH 64
/** Bytes one templated kustomization renders, all files together (co/render/kzgen.h). */
#define CO_MAX_KZGEN_OUTPUT (256 * CO_MIB)

/* Sources: downloads, archives, git checkouts and the artifact cache. */
/** One downloaded source artifact (compressed, as transferred). */
#define CO_MAX_ARTIFACT_DOWNLOAD (256 * CO_MIB)
/** Bytes written when one archive or git tree is extracted (decompression-bomb guard). */
#define CO_MAX_EXTRACT_TOTAL (1024 * CO_MIB)
/** One file extracted from an archive or a git tree. */
#define CO_MAX_EXTRACT_FILE (128 * CO_MIB)
/** Entries (files, directories, links) in one archive or git tree. */
#define CO_MAX_EXTRACT_ENTRIES 100000
/** One path inside an archive or git tree, and one symlink target. */
#define CO_MAX_EXTRACT_PATH 4096
/** Directory depth of one path inside an archive or git tree. */
#define CO_MAX_EXTRACT_DEPTH 256
/** Symlinks followed while resolving one path inside an extracted tree (like Linux's 40). */
#define CO_MAX_EXTRACT_SYMLINK_HOPS 40
/** All headers of one HTTP response to a source request. */
#define CO_MAX_HTTP_HEADERS (64 * CO_KIB)
/** Redirects followed for one source request. */
#define CO_MAX_HTTP_REDIRECTS 10
/** A URL, digest or revision of a source artifact. */
#define CO_MAX_SOURCE_STRING (8 * CO_KIB)
/** Default size of the artifact cache on disk (the controller's flag can change it). */
#define CO_DEFAULT_SOURCE_CACHE (2048 * CO_MIB)
/** References advertised by one git remote (ls-remote). */
#define CO_MAX_GIT_REFS 100000
/** A credential value (password, token, private key, known_hosts) from a git Secret. */
#define CO_MAX_GIT_CREDENTIAL (256 * CO_KIB)

/** One SOPS-encrypted file, and its decrypted output. */
#define CO_MAX_SOPS_FILE (64 * CO_MIB)
/** One age-encrypted payload or identity file (sops wraps a 32-byte data key). */
#define CO_MAX_AGE_PAYLOAD (1 * CO_MIB)
/** Nesting of ${...} expressions inside one envsubst input. */
#define CO_MAX_ENVSUBST_NESTING 64
/** Output of one envsubst evaluation. */
#define CO_MAX_ENVSUBST_OUTPUT (64 * CO_MIB)

/** Field errors kept by one validation (further ones are only counted). */
#define CO_MAX_FIELD_ERRORS 100
/** The ComponentPolicy exemption record of a Component, an annotation (co/api/policy.h). */
#define CO_MAX_EXEMPTION_RECORD (64 * CO_KIB)
/** Groups one exemption record may name (the webhook considers at most 256 of a user's). */
#define CO_MAX_EXEMPTION_RECORD_GROUPS 256
/** Items of one list in a Component or ComponentPolicy spec (dependencies, valuesFrom, ...);
 * also the CRD's maxItems, so the API server enforces it too. */
#define CO_MAX_SPEC_LIST_ITEMS 1000
/** The files of one Blueprint or BlueprintVersion, paths and contents together
 * (docs/blueprints.md): well below the 1.5 MiB etcd allows an object. */
#define CO_MAX_BLUEPRINT_FILES (1 * CO_MIB)
/** One template source (a chart template, a templatized kustomization file). */
#define CO_MAX_TEMPLATE_SOURCE (16 * CO_MIB)
/** The output of one template execution. */
#define CO_MAX_TEMPLATE_OUTPUT (64 * CO_MIB)
/** Nesting of parenthesised pipelines and control structures in one template. */
#define CO_MAX_TEMPLATE_NESTING 1000
/** Nesting of template/include/tpl calls during execution. */
#define CO_MAX_TEMPLATE_CALL_DEPTH 1000
/** Control structures, pipelines and template calls active at once during one execution, all
 * templates together: each template stays within CO_MAX_TEMPLATE_NESTING and the calls within
 * CO_MAX_TEMPLATE_CALL_DEPTH, but a template nesting 1000 levels that calls itself 1000 times
 * would need a million stack frames. 10000 levels take at most 2.5 MiB of stack in a release
 * build (6 MiB with sanitizers), within the 8 MiB of a thread together with a parse of
 * CO_MAX_TEMPLATE_NESTING levels (`tpl`). */
#define CO_MAX_TEMPLATE_EXEC_NESTING 10000
/** Nesting of the values a template walks (maps and lists in maps and lists) for printing,
 * encoding, comparing, copying and merging; deeper values, and values that contain themselves,
 * are a template error. */
#define CO_MAX_TEMPLATE_VALUE_DEPTH 1000
/** Execution steps (nodes evaluated, loop iterations) of one render session. */
#define CO_MAX_TEMPLATE_STEPS 100000000ULL

/** Nesting of subcharts (charts/ inside charts/ ...) of one Helm chart. */
#define CO_MAX_HELM_CHART_DEPTH 32
/** Rendered output of all templates of one Helm chart. */
#define CO_MAX_HELM_OUTPUT (128 * CO_MIB)

/* Render budgets (co/util/budget.h): what one render of a Component may use, over all its steps.
 * The controller renders --max-concurrent-reconciles Components at once (5 by default) under the
 * memory limit of deploy/base/controller.yaml (512Mi). A render stopped at a 64 MiB budget peaks
 * at about 73 MB of resident memory (what the budget does not count: allocator overhead, parse
 * trees, the buffers of the steps in between), so five take 365 MB, and the process itself
 * (about 25 MB with a few Components; the informer cache grows with their number) leaves some
 * 100 MiB of room. Thirty seconds of CPU time is three orders of magnitude above the largest
 * chart and kustomization of the benchmarks (20 ms at most) and ends a template that loops
 * forever before it holds a worker for long. */
/** Default CPU time of one render, nanoseconds (--render-cpu-budget). */
#define CO_DEFAULT_RENDER_CPU (30LL * 1000 * 1000 * 1000)
/** Default memory of one render: template values, rendered output, decoded documents and source
 * files held in memory (--render-memory-budget). */
#define CO_DEFAULT_RENDER_MEMORY (64 * CO_MIB)

#endif
