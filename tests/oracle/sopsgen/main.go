// SPDX-License-Identifier: Apache-2.0

// sopsgen writes SOPS-format encrypted files without any code from this project, as an
// independent check of the C decryptor: values are encrypted with Go's crypto/aes GCM (32-byte
// IVs, the tree path as additional data), the MAC is Go's SHA-512 over the plaintext values in
// document order, data keys are wrapped by the real `age` and `gpg` command-line tools, and key
// groups use Shamir's scheme over GF(2^8) with the AES polynomial, implemented here with Go's
// arithmetic independently of the C code. Built in GOPATH mode by tests/oracle/build.sh.
//
// stdin: one JSON request:
//
//	{"format": "yaml|json|dotenv|ini|binary", "tree": {...ordered...},
//	 "rule": {"encrypted_regex": "..."}, "mac_only_encrypted": false,
//	 "groups": [[{"age": "age1..."}, {"pgp": "FINGERPRINT"}], ...], "threshold": 2,
//	 "lastmodified": "2024-01-02T03:04:05Z"}
//
// stdout: the encrypted file. PGP keys are looked up in $GNUPGHOME.
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// item and tree keep the document order that Go maps would lose.
type item struct {
	Key   string
	Value interface{}
}
type tree []item

func decodeValue(dec *json.Decoder) (interface{}, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			var out tree
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, item{k.(string), val})
			}
			_, err := dec.Token()
			return out, err
		}
		var out []interface{}
		for dec.More() {
			val, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		_, err := dec.Token()
		return out, err
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return int(i), nil
		}
		return v.Float64()
	default:
		return v, nil
	}
}

type request struct {
	Format           string                `json:"format"`
	Tree             json.RawMessage       `json:"tree"`
	Rule             map[string]string     `json:"rule"`
	MacOnlyEncrypted bool                  `json:"mac_only_encrypted"`
	Groups           [][]map[string]string `json:"groups"`
	Threshold        int                   `json:"threshold"`
	LastModified     string                `json:"lastmodified"`
}

var (
	req     request
	dataKey = make([]byte, 32)
	mac     = sha512.New()
	rx      *regexp.Regexp
)

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "sopsgen: "+format+"\n", args...)
	os.Exit(1)
}

func shouldEncrypt(path []string) bool {
	for name, arg := range req.Rule {
		any := false
		for _, p := range path {
			switch name {
			case "unencrypted_suffix", "encrypted_suffix":
				any = any || strings.HasSuffix(p, arg)
			default:
				any = any || rx.MatchString(p)
			}
		}
		if strings.HasPrefix(name, "unencrypted") {
			return !any
		}
		return any
	}
	for _, p := range path {
		if strings.HasSuffix(p, "_unencrypted") {
			return false
		}
	}
	return true
}

func plainBytes(v interface{}) ([]byte, string) {
	switch v := v.(type) {
	case string:
		return []byte(v), "str"
	case int:
		return []byte(strconv.Itoa(v)), "int"
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), "float"
	case bool:
		if v {
			return []byte("True"), "bool"
		}
		return []byte("False"), "bool"
	}
	die("unsupported value %T", v)
	return nil, ""
}

func seal(plain []byte, typ, aad string) string {
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		die("%v", err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, 32)
	if err != nil {
		die("%v", err)
	}
	iv := make([]byte, 32)
	rand.Read(iv)
	out := gcm.Seal(nil, iv, plain, []byte(aad))
	n := len(out) - 16
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:%s]",
		base64.StdEncoding.EncodeToString(out[:n]), base64.StdEncoding.EncodeToString(iv),
		base64.StdEncoding.EncodeToString(out[n:]), typ)
}

func encrypt(v interface{}, path []string) interface{} {
	switch v := v.(type) {
	case tree:
		out := tree{}
		for _, it := range v {
			out = append(out, item{it.Key, encrypt(it.Value, append(append([]string{}, path...), it.Key))})
		}
		return out
	case []interface{}:
		out := []interface{}{}
		for _, e := range v {
			out = append(out, encrypt(e, path))
		}
		return out
	case nil:
		return nil
	}
	enc := shouldEncrypt(path)
	b, typ := plainBytes(v)
	if !req.MacOnlyEncrypted || enc {
		mac.Write(b)
	}
	if !enc {
		return v
	}
	if s, ok := v.(string); ok && s == "" {
		return ""
	}
	return seal(b, typ, strings.Join(path, ":")+":")
}

// gfMul multiplies in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
func gfMul(a, b byte) byte {
	var p byte
	for b > 0 {
		if b&1 == 1 {
			p ^= a
		}
		hi := a & 0x80
		a <<= 1
		if hi != 0 {
			a ^= 0x1b
		}
		b >>= 1
	}
	return p
}

// split returns n shares (y bytes then the x coordinate) of secret with the given threshold.
func split(secret []byte, n, threshold int) [][]byte {
	xs := make([]byte, 0, n)
	for len(xs) < n {
		var b [1]byte
		rand.Read(b[:])
		if b[0] == 0 || bytes.IndexByte(xs, b[0]) >= 0 {
			continue
		}
		xs = append(xs, b[0])
	}
	shares := make([][]byte, n)
	for i := range shares {
		shares[i] = make([]byte, len(secret)+1)
		shares[i][len(secret)] = xs[i]
	}
	for k, s := range secret {
		coef := make([]byte, threshold)
		rand.Read(coef)
		coef[0] = s
		for i, x := range xs {
			var y byte
			for c := threshold - 1; c >= 0; c-- {
				y = gfMul(y, x) ^ coef[c]
			}
			shares[i][k] = y
		}
	}
	return shares
}

func run(input []byte, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		die("%s: %v: %s", name, err, errb.String())
	}
	return out.String()
}

func keyEntries(part []byte, group []map[string]string) tree {
	var ages, pgps []interface{}
	for _, k := range group {
		if r, ok := k["age"]; ok {
			ages = append(ages, tree{{"recipient", r}, {"enc", run(part, "age", "-a", "-r", r)}})
		}
		if fp, ok := k["pgp"]; ok {
			enc := run(part, "gpg", "--batch", "--quiet", "--trust-model", "always", "--armor",
				"--encrypt", "--recipient", fp)
			pgps = append(pgps, tree{{"created_at", req.LastModified}, {"enc", enc}, {"fp", fp}})
		}
	}
	var t tree
	if ages != nil {
		t = append(t, item{"age", ages})
	}
	if pgps != nil {
		t = append(t, item{"pgp", pgps})
	}
	return t
}

func metadata(macEnc string) tree {
	var md tree
	if len(req.Groups) == 1 {
		md = append(md, keyEntries(dataKey, req.Groups[0])...)
	} else {
		shares := split(dataKey, len(req.Groups), req.Threshold)
		var groups []interface{}
		for i, g := range req.Groups {
			groups = append(groups, keyEntries(shares[i], g))
		}
		md = append(md, item{"key_groups", groups}, item{"shamir_threshold", req.Threshold})
	}
	md = append(md, item{"lastmodified", req.LastModified}, item{"mac", macEnc})
	for k, v := range req.Rule {
		md = append(md, item{k, v})
	}
	if req.MacOnlyEncrypted {
		md = append(md, item{"mac_only_encrypted", true})
	}
	return append(md, item{"version", "3.9.0"})
}

// ---- writers ----

func yamlScalar(v interface{}) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if strings.HasPrefix(v, "ENC[") {
			return v
		}
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

func yamlKey(k string) string {
	switch strings.ToLower(k) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n":
		return strconv.Quote(k)
	}
	if plainKey.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

func writeYAML(w *bytes.Buffer, v interface{}, indent string) {
	switch v := v.(type) {
	case tree:
		if len(v) == 0 {
			w.WriteString(" {}\n")
			return
		}
		w.WriteString("\n")
		for _, it := range v {
			w.WriteString(indent + yamlKey(it.Key) + ":")
			writeYAMLValue(w, it.Value, indent)
		}
	case []interface{}:
		if len(v) == 0 {
			w.WriteString(" []\n")
			return
		}
		w.WriteString("\n")
		for _, e := range v {
			w.WriteString(indent + "-")
			writeYAMLValue(w, e, indent)
		}
	}
}

func writeYAMLValue(w *bytes.Buffer, v interface{}, indent string) {
	switch v.(type) {
	case tree, []interface{}:
		writeYAML(w, v, indent+"    ")
	default:
		w.WriteString(" " + yamlScalar(v) + "\n")
	}
}

func writeJSON(w *bytes.Buffer, v interface{}) {
	switch v := v.(type) {
	case tree:
		w.WriteString("{")
		for i, it := range v {
			if i > 0 {
				w.WriteString(",")
			}
			k, _ := json.Marshal(it.Key)
			w.Write(k)
			w.WriteString(":")
			writeJSON(w, it.Value)
		}
		w.WriteString("}")
	case []interface{}:
		w.WriteString("[")
		for i, e := range v {
			if i > 0 {
				w.WriteString(",")
			}
			writeJSON(w, e)
		}
		w.WriteString("]")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			die("%v", err)
		}
		w.Write(b)
	}
}

// flatten writes sops' flattened metadata keys (a__map_b, a__list_0__map_c).
func flatten(prefix string, v interface{}, out *[]item) {
	switch v := v.(type) {
	case tree:
		for _, it := range v {
			flatten(prefix+"__map_"+it.Key, it.Value, out)
		}
	case []interface{}:
		for i, e := range v {
			flatten(prefix+"__list_"+strconv.Itoa(i), e, out)
		}
	default:
		*out = append(*out, item{prefix, v})
	}
}

func flatMeta(md tree) []item {
	var out []item
	for _, it := range md {
		flatten(it.Key, it.Value, &out)
	}
	return out
}

func scalarText(v interface{}) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := plainBytes(v)
	if _, isBool := v.(bool); isBool {
		return strings.ToLower(string(b))
	}
	return string(b)
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil || json.Unmarshal(input, &req) != nil {
		die("bad request")
	}
	for _, arg := range req.Rule {
		rx = regexp.MustCompile(arg)
	}
	dec := json.NewDecoder(bytes.NewReader(req.Tree))
	dec.UseNumber()
	plain, err := decodeValue(dec)
	if err != nil {
		die("bad tree: %v", err)
	}
	rand.Read(dataKey)
	if req.MacOnlyEncrypted {
		init := sha256.Sum256([]byte("sops"))
		mac.Write(init[:])
	}
	var docs []interface{}
	if list, ok := plain.([]interface{}); ok && req.Format == "yaml" {
		docs = list // several YAML documents
	} else {
		docs = []interface{}{plain}
	}
	var enc []tree
	for _, d := range docs {
		enc = append(enc, encrypt(d, nil).(tree))
	}
	macEnc := seal([]byte(fmt.Sprintf("%X", mac.Sum(nil))), "str", req.LastModified)
	md := metadata(macEnc)
	var w bytes.Buffer
	switch req.Format {
	case "yaml":
		for i, d := range enc {
			if i > 0 {
				w.WriteString("---")
			}
			if i == 0 {
				d = append(d, item{"sops", md})
			}
			writeYAML(&w, d, "")
			if i == 0 {
				// The first line written is the document's leading newline.
				b := w.Bytes()[1:]
				w = *bytes.NewBuffer(append([]byte{}, b...))
			}
		}
	case "json", "binary":
		writeJSON(&w, append(enc[0], item{"sops", md}))
		// sops writes indented JSON; the marker `"mac": "ENC[` needs the space.
		var ind bytes.Buffer
		json.Indent(&ind, w.Bytes(), "", "\t")
		w = ind
	case "dotenv":
		for _, it := range enc[0] {
			w.WriteString(it.Key + "=" + strings.ReplaceAll(scalarText(it.Value), "\n", "\\n") + "\n")
		}
		for _, it := range flatMeta(md) {
			w.WriteString("sops_" + it.Key + "=" + strings.ReplaceAll(scalarText(it.Value), "\n", "\\n") + "\n")
		}
	case "ini":
		for _, sec := range enc[0] {
			w.WriteString("[" + sec.Key + "]\n")
			for _, it := range sec.Value.(tree) {
				w.WriteString(it.Key + " = " + scalarText(it.Value) + "\n")
			}
			w.WriteString("\n")
		}
		w.WriteString("[sops]\n")
		for _, it := range flatMeta(md) {
			w.WriteString(it.Key + " = " + strings.ReplaceAll(scalarText(it.Value), "\n", "\\n") + "\n")
		}
	default:
		die("unknown format %q", req.Format)
	}
	os.Stdout.Write(w.Bytes())
}
