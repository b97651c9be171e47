// SPDX-License-Identifier: Apache-2.0

// Command sourcedigest is the differential oracle for the source digests of
// docs/behaviour.md, "Sources": Go's encoding/json of strings and of the digest
// arrays, hashed with sha256 as the Go original does. One request per line on
// stdin, fields hex-encoded ("-" for the empty string), one answer per line:
//
//	S <string>                         -> hex of json.Marshal(string)
//	D <uid> <gen> <n> {<k> <v>}n <url> <digest> <revision>
//	                                   -> sha256 hex of json.Marshal([]any{uid, gen, annotations, url, digest, revision})
//	                                      (n = -1: nil annotations)
//	P <url> <digest> <revision>        -> sha256 hex of json.Marshal([]any{url, digest, revision})
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func unhex(s string) string {
	if s == "-" {
		return ""
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func digest(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch f[0] {
		case "S":
			b, err := json.Marshal(unhex(f[1]))
			if err != nil {
				panic(err)
			}
			fmt.Fprintln(out, hex.EncodeToString(b))
		case "D":
			gen, _ := strconv.ParseInt(f[2], 10, 64)
			n, _ := strconv.Atoi(f[3])
			var ann map[string]string
			i := 4
			if n >= 0 {
				ann = map[string]string{}
				for j := 0; j < n; j++ {
					ann[unhex(f[i])] = unhex(f[i+1])
					i += 2
				}
			}
			fmt.Fprintln(out, digest([]interface{}{unhex(f[1]), gen, ann, unhex(f[i]), unhex(f[i+1]), unhex(f[i+2])}))
		case "P":
			fmt.Fprintln(out, digest([]interface{}{unhex(f[1]), unhex(f[2]), unhex(f[3])}))
		}
	}
}
