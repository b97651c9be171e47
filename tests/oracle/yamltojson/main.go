// SPDX-License-Identifier: Apache-2.0
//
// yamltojson is the reference the YAML unit tests compare co_yaml against: it converts each
// YAML case with sigs.k8s.io/yaml's YAMLToJSON, the conversion kubectl, Helm and the Go
// operator use. Cases arrive on stdin separated by NUL bytes; for each one it prints a line
// "ok <json>" or "err <message>".
//
// Built by tests/oracle/build.sh in GOPATH mode against Debian's golang-k8s-sigs-yaml-dev.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if len(in) == 0 {
		return
	}
	for _, c := range bytes.Split(in, []byte{0}) {
		j, err := yaml.YAMLToJSON(c)
		if err != nil {
			fmt.Fprintf(out, "err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		fmt.Fprintf(out, "ok %s\n", j)
	}
}
