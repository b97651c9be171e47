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

/** AdmissionReview request body (controller-runtime's limit: two 3 MiB objects + envelope). */
#define CO_MAX_ADMISSION_BODY (7 * CO_MIB)
/** ConversionReview request body (a LIST of many objects). */
#define CO_MAX_CONVERSION_BODY (64 * CO_MIB)
/** One API server response body. */
#define CO_MAX_API_RESPONSE (512 * CO_MIB)
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
/** One log line. */
#define CO_MAX_LOG_LINE (64 * CO_KIB)

#endif
