// SPDX-License-Identifier: Apache-2.0

// envsubst-oracle runs github.com/drone/envsubst (Debian's golang-github-drone-envsubst-dev,
// version 1.0.3, the version the original operator uses) over test cases, so that the C
// implementation can be compared with the real library. Built in GOPATH mode by
// tests/oracle/build.sh.
//
// Input: one JSON object per line, {"vars": {"NAME": "<base64 value>"}, "in": "<base64>"}.
// Output: one JSON object per line, {"out": "<base64>", "err": "<message>"}; a panic inside the
// library is reported as err "panic: ...".
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"github.com/drone/envsubst"
)

type request struct {
	Vars map[string]string `json:"vars"`
	In   string            `json:"in"`
}

type response struct {
	Out string `json:"out"`
	Err string `json:"err"`
}

func eval(in string, vars map[string]string) (out string, errText string) {
	defer func() {
		if r := recover(); r != nil {
			out, errText = "", fmt.Sprintf("panic: %v", r)
		}
	}()
	res, err := envsubst.Eval(in, func(name string) string { return vars[name] })
	if err != nil {
		return "", err.Error()
	}
	return res, ""
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<26)
	writer := bufio.NewWriter(os.Stdout)
	defer writer.Flush()
	for scanner.Scan() {
		var req request
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		vars := map[string]string{}
		for k, v := range req.Vars {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bad value:", err)
				os.Exit(2)
			}
			vars[k] = string(b)
		}
		in, err := base64.StdEncoding.DecodeString(req.In)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad input:", err)
			os.Exit(2)
		}
		out, errText := eval(string(in), vars)
		line, _ := json.Marshal(response{Out: base64.StdEncoding.EncodeToString([]byte(out)), Err: errText})
		writer.Write(line)
		writer.WriteString("\n")
	}
}
