// SPDX-License-Identifier: Apache-2.0
//
// The differential oracle for the template engine: renders test cases with Go's text/template
// and sprig (and the runtime's additional functions, re-implemented here from their documented
// behaviour) and prints each result length-prefixed, so that the C test suite can compare its
// own rendering byte for byte.
//
// Usage: gotemplate CASEFILE...   (case file format: see tests/oracle/gotemplate/README.md)
//
//	gotemplate -bench N CASEFILE...   parses each case once, renders it N times and prints
//	                                  "BENCH name wall-ns-per-render cpu-ns-per-render bytes"
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/Masterminds/sprig"
	"github.com/spf13/cast"
	kyaml "sigs.k8s.io/yaml"
)

type tcase struct {
	name    string
	tmpl    string
	data    string
	options map[string]string
	defines []string
	hasData bool
}

// parseCases reads the case file format shared with the C runner.
func parseCases(path string) ([]tcase, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []tcase
	var cur *tcase
	var section string
	var buf []string
	var eachTmpl, eachData []string
	flush := func() {
		if cur == nil || section == "" {
			return
		}
		text := strings.Join(buf, "\n")
		switch section {
		case "template":
			cur.tmpl = text
		case "data":
			cur.data = text
			cur.hasData = true
		case "define":
			cur.defines = append(cur.defines, text)
		case "template-each":
			eachTmpl = append([]string{}, buf...)
		case "data-each":
			eachData = append([]string{}, buf...)
		}
		buf = nil
	}
	finish := func() {
		flush()
		if cur == nil {
			return
		}
		switch {
		case len(eachTmpl) > 0:
			for i, t := range eachTmpl {
				c := *cur
				c.name = fmt.Sprintf("%s#%d", cur.name, i+1)
				c.tmpl = t
				out = append(out, c)
			}
		case len(eachData) > 0:
			for i, d := range eachData {
				c := *cur
				c.name = fmt.Sprintf("%s#%d", cur.name, i+1)
				c.data = d
				c.hasData = true
				out = append(out, c)
			}
		default:
			out = append(out, *cur)
		}
		eachTmpl, eachData = nil, nil
		cur = nil
		section = ""
	}
	// the newline that ends the file ends the last line; it does not start an empty one
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			finish()
			cur = &tcase{name: strings.TrimSpace(line[4:]), options: map[string]string{}}
		case strings.HasPrefix(line, "--- ") && cur != nil:
			flush()
			fields := strings.Fields(line[4:])
			section = fields[0]
			if section == "options" {
				for _, f := range fields[1:] {
					k, v, _ := strings.Cut(f, "=")
					cur.options[k] = v
				}
				section = ""
			}
		default:
			if cur != nil && section != "" {
				buf = append(buf, line)
			}
		}
	}
	finish()
	return out, nil
}

// decodeData decodes JSON the way the original decodes values (float64 numbers) or, with
// numbers=int64, the way Kubernetes decodes unstructured objects.
func decodeData(c tcase) (any, error) {
	if !c.hasData || strings.TrimSpace(c.data) == "" {
		return nil, nil
	}
	if c.options["numbers"] != "int64" {
		var v any
		err := json.Unmarshal([]byte(c.data), &v)
		return v, err
	}
	d := json.NewDecoder(strings.NewReader(c.data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return convertNumbers(v), nil
}

func convertNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = convertNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = convertNumbers(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

// runtimeFuncs are the component-operator-runtime additions (templatex.FuncMap and the
// template-context functions), written from their documented behaviour.
func runtimeFuncs(t **template.Template) template.FuncMap {
	toYaml := func(data any) (string, error) {
		raw, err := kyaml.Marshal(data)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(string(raw), "\n"), nil
	}
	fromYaml := func(data string) (any, error) {
		var res any
		err := kyaml.Unmarshal([]byte(data), &res)
		return res, err
	}
	fromYamlArray := func(data string) ([]any, error) {
		var res []any
		err := kyaml.Unmarshal([]byte(data), &res)
		return res, err
	}
	toJson := func(data any) (string, error) {
		raw, err := json.Marshal(data)
		return string(raw), err
	}
	toPrettyJson := func(data any) (string, error) {
		raw, err := json.MarshalIndent(data, "", "  ")
		return string(raw), err
	}
	toRawJson := func(data any) (string, error) {
		buf := new(bytes.Buffer)
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&data); err != nil {
			return "", err
		}
		return strings.TrimSuffix(buf.String(), "\n"), nil
	}
	fromJson := func(data string) (any, error) {
		var res any
		err := json.Unmarshal([]byte(data), &res)
		return res, err
	}
	fromJsonArray := func(data string) ([]any, error) {
		var res []any
		err := json.Unmarshal([]byte(data), &res)
		return res, err
	}
	required := func(warn string, data any) (any, error) {
		if data == nil {
			return data, errors.New(warn)
		}
		if s, ok := data.(string); ok && s == "" {
			return data, errors.New(warn)
		}
		return data, nil
	}
	shift := func(left bool) func(by, arg any) (uint64, error) {
		return func(by, arg any) (uint64, error) {
			a, err := cast.ToUint64E(arg)
			if err != nil {
				return 0, err
			}
			b, err := cast.ToUint64E(by)
			if err != nil {
				return 0, err
			}
			if left {
				return a << b, nil
			}
			return a >> b, nil
		}
	}
	bitop := func(init uint64, op func(a, b uint64) uint64) func(args ...any) (uint64, error) {
		return func(args ...any) (uint64, error) {
			r := init
			for _, arg := range args {
				a, err := cast.ToUint64E(arg)
				if err != nil {
					return 0, err
				}
				r = op(r, a)
			}
			return r, nil
		}
	}
	parseIPv4 := func(data any) (uint32, error) {
		s, err := cast.ToStringE(data)
		if err != nil {
			return 0, err
		}
		octets := strings.Split(s, ".")
		if len(octets) != 4 {
			return 0, fmt.Errorf("invalid IP address")
		}
		var r uint64
		for i := uint64(0); i < 4; i++ {
			x, err := strconv.ParseUint(octets[3-i], 10, 8)
			if err != nil {
				return 0, err
			}
			r |= x << (8 * i)
		}
		return uint32(r), nil
	}
	formatIPv4 := func(data any) (string, error) {
		i, err := cast.ToUint32E(data)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d.%d.%d.%d", i&0xFF000000>>24, i&0x0FF0000>>16, i&0x00FF00>>8, i&0x000000FF), nil
	}
	adjust := func(b []byte) string {
		return string(bytes.ReplaceAll(b, []byte("<no value>"), []byte("")))
	}
	include := func(name string, data any) (string, error) {
		var buf bytes.Buffer
		err := (*t).ExecuteTemplate(&buf, name, data)
		return adjust(buf.Bytes()), err
	}
	tpl := func(text string, data any) (string, error) {
		var buf bytes.Buffer
		c, err := (*t).Clone()
		if err != nil {
			panic(err)
		}
		c = c.New("gotpl")
		if _, err := c.Parse(text); err != nil {
			return "", err
		}
		err = c.Execute(&buf, data)
		return adjust(buf.Bytes()), err
	}
	return template.FuncMap{
		"toYaml": toYaml, "mustToYaml": toYaml,
		"fromYaml": fromYaml, "mustFromYaml": fromYaml,
		"fromYamlArray": fromYamlArray, "mustFromYamlArray": fromYamlArray,
		"toJson": toJson, "mustToJson": toJson,
		"toPrettyJson": toPrettyJson, "mustToPrettyJson": toPrettyJson,
		"toRawJson": toRawJson, "mustToRawJson": toRawJson,
		"fromJson": fromJson, "mustFromJson": fromJson,
		"fromJsonArray": fromJsonArray, "mustFromJsonArray": fromJsonArray,
		"required":          required,
		"bitwiseShiftLeft":  shift(true),
		"bitwiseShiftRight": shift(false),
		"bitwiseAnd":        bitop(math.MaxUint64, func(a, b uint64) uint64 { return a & b }),
		"bitwiseOr":         bitop(0, func(a, b uint64) uint64 { return a | b }),
		"bitwiseXor":        bitop(0, func(a, b uint64) uint64 { return a ^ b }),
		"parseIPv4Address":  parseIPv4,
		"formatIPv4Address": formatIPv4,
		"include":           include,
		"tpl":               tpl,
	}
}

// toTOML is Helm's toToml: the encoder's error text is the result.
func toTOML(v any) string {
	b := bytes.NewBuffer(nil)
	if err := toml.NewEncoder(b).Encode(v); err != nil {
		return err.Error()
	}
	return b.String()
}

func render(c tcase) (string, error) {
	var t *template.Template
	root := template.New(c.name)
	if mk, ok := c.options["missingkey"]; ok {
		root.Option("missingkey=" + mk)
	}
	if c.options["delims"] != "" {
		l, r, _ := strings.Cut(c.options["delims"], ",")
		root.Delims(l, r)
	}
	switch c.options["funcs"] {
	case "builtin":
	case "sprig":
		root.Funcs(sprig.TxtFuncMap())
	case "helm":
		root.Funcs(sprig.TxtFuncMap())
		root.Funcs(runtimeFuncs(&t))
		root.Funcs(template.FuncMap{"toToml": toTOML})
	default:
		root.Funcs(sprig.TxtFuncMap())
		root.Funcs(runtimeFuncs(&t))
	}
	t = root
	for i, d := range c.defines {
		if _, err := t.New(fmt.Sprintf("define%d", i+1)).Parse(d); err != nil {
			return "", err
		}
	}
	if _, err := t.Parse(c.tmpl); err != nil {
		return "", err
	}
	data, err := decodeData(c)
	if err != nil {
		return "", fmt.Errorf("bad test data: %v", err)
	}
	var buf bytes.Buffer
	err = t.Execute(&buf, data)
	out := buf.String()
	if c.options["cleanup"] == "true" {
		out = strings.ReplaceAll(out, "<no value>", "")
	}
	return out, err
}

// cpuTime is the CPU time of the process (all threads, user and system) in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchmark renders every case of the files n times after one parse (the data decoded once).
func benchmark(n int, files []string) error {
	for _, path := range files {
		cases, err := parseCases(path)
		if err != nil {
			return err
		}
		for _, c := range cases {
			var t *template.Template
			root := template.New(c.name).Funcs(sprig.TxtFuncMap())
			root.Funcs(runtimeFuncs(&t))
			t = root
			for i, d := range c.defines {
				if _, err := t.New(fmt.Sprintf("define%d", i+1)).Parse(d); err != nil {
					return err
				}
			}
			if _, err := t.Parse(c.tmpl); err != nil {
				return err
			}
			data, err := decodeData(c)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			cpu0 := cpuTime()
			start := time.Now()
			for i := 0; i < n; i++ {
				buf.Reset()
				if err := t.Execute(&buf, data); err != nil {
					return err
				}
			}
			elapsed := time.Since(start)
			cpu := cpuTime() - cpu0
			fmt.Printf("BENCH %s %d %d %d\n", c.name, elapsed.Nanoseconds()/int64(n), cpu/int64(n), buf.Len())
		}
	}
	return nil
}

func main() {
	if len(os.Args) > 3 && os.Args[1] == "-bench" {
		n, err := strconv.Atoi(os.Args[2])
		if err == nil {
			err = benchmark(n, os.Args[3:])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, path := range os.Args[1:] {
		cases, err := parseCases(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, c := range cases {
			out, err := render(c)
			fmt.Fprintf(w, "### %s\n", c.name)
			if err != nil {
				msg := err.Error()
				fmt.Fprintf(w, "ERR %d\n%s\n", len(msg), msg)
			} else {
				fmt.Fprintf(w, "OK %d\n%s\n", len(out), out)
			}
		}
	}
}
