/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `component-webhook certs ...`: the certificate code as a command line, for bootstrapping
 * without a cluster (a CA and a serving certificate as files, e.g. for --tls-cert-file) and for
 * inspecting what a Secret or a file holds.
 *
 *   certs create-ca --out-dir DIR [--ca-name CN] [--validity 8760h] [--key-type ecdsa-p256]
 *   certs create-serving --ca-dir DIR --out-dir DIR [--service component-webhook]
 *         [--namespace component-operator] [--extra-name NAME]... [--validity 2160h]
 *   certs inspect FILE...
 *   certs verify --ca FILE --cert FILE [--name NAME]
 */
#ifndef CERTS_CERTS_CLI_H
#define CERTS_CERTS_CLI_H

/** Runs the subcommand in argv[0..argc) (argv[0] is "certs"). @return the exit status. */
int co_certs_cli(int argc, char **argv);

#endif
