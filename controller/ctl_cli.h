/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_cli.h
 * Offline subcommands of component-controller: work on local files, never on a cluster
 * unless a subcommand says so, and share every line of rendering and validation code with
 * the daemons.
 *
 *   component-controller kustomize [-o yaml|json] DIR
 *   component-controller template [--data FILE] [--set PATH=VALUE]... [--env] TEMPLATE_FILE...
 *   component-controller validate [--policy FILE]... [flags] FILE...
 *   component-controller graph [--namespace NS] FILE... | --kubeconfig PATH [--context C]
 *   component-controller render [flags] DIR
 *   component-controller diff|plan --kubeconfig PATH (-f FILE [DIR] | NAMESPACE/NAME [DIR])
 *
 * Output goes to stdout, errors to stderr (naming the file and field where known). Exit
 * status: 0 on success, 1 when the input is bad (the message says why), 2 on a usage error;
 * diff and plan, which preview a Component against a cluster by dry run (docs/preview.md),
 * exit as kubectl diff does: 0 no change, 1 changes, 2 any error.
 */
#ifndef CTL_CLI_H
#define CTL_CLI_H

#include <stdbool.h>
#include <stdio.h>

/** True when @p arg names a subcommand (the daemon is started when no subcommand is given). */
bool ctl_cli_is_subcommand(const char *arg);

/**
 * Runs the subcommand argv[0] with its arguments.
 * @param out where results go (stdout in the binary)
 * @param err where diagnostics go (stderr in the binary)
 * @return the process exit status.
 */
int ctl_cli_main(int argc, char **argv, FILE *out, FILE *err);

/** Writes the list of subcommands, one per line with a summary. */
void ctl_cli_usage(FILE *out);

#endif
