// SPDX-License-Identifier: Apache-2.0
//
// goduration writes the table tests/fixtures/duration/go_durations.tsv, against which the
// unit tests check co_duration: Go's own time.ParseDuration on a list of inputs and
// time.Duration.String() on a list of values, both hand-picked edge cases and a fixed
// pseudo-random sample. Rows (tab-separated):
//
//	P <input as hex> ok <nanoseconds>
//	P <input as hex> err <message>
//	F <nanoseconds> <string>
//
// Regenerate with: $(tests/oracle/build.sh goduration) > tests/fixtures/duration/go_durations.tsv
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"time"
)

var parseInputs = []string{
	// simple and compound
	"0", "+0", "-0", "0s", "5s", "30s", "1478s", "-5s", "+5s", "-0s", "+0s",
	"5.0s", "5.6s", "5.s", ".5s", "1.004s", "1.0040s", "100.00100s",
	"10ns", "11us", "12µs", "12μs", "13ms", "14s", "15m", "16h",
	"3h30m", "10.5s4m", "-2m3.4s", "1h2m3s4ms5us6ns", "39h9m14.425s",
	"52763797000ns", "0.3333333333333333333h", "9007199254740993ns",
	"9223372036854775807ns", "9223372036854775.807us", "9223372036.854775807s",
	"2562047h47m16.854775807s", "-9223372036854775808ns", "-2562047h47m16.854775808s",
	"0.100000000000000000000h", "0.830103483285477580700h",
	"1.0000000005h", "1.00000000005m", "0.0000000001s", "1.9999999999s",
	"10m", "60m", "1h30m", "300ms", "1.5h", "2h45m", "1m1s1ms", "1s1s", "1m60s",
	// errors
	"", "3", "-", "+", "s", ".", "-.", ".s", "+.s", "1d", "1w", "1y", "1hh", "1H", "1S",
	"1 s", " 1s", "1s ", "1.2.3s", "1..2s", "1e3s", "1,5s", "0x10s", "--1s", "+-1s",
	"1s-1s", "1msms", "1µ", "1us1", "1h1", "∞s", "1\xffs", "1\ts", "1\"s", "1\\s",
	"9223372036854775808ns", "9223372036854775807.5ns", "-9223372036854775809ns",
	"9223372036854775808", "2562047h47m16.854775808s", "3000000h", "9223372036s854775808ns",
	"18446744073709551616ns", "99999999999999999999h", "1.00000000000000000000000001s",
	"0.9223372036854775808s", "1000000000000000000000000000000ns", "1h-1m", "1.-1s",
	"\xc2\xb5s", "1\xc2s", "1\xef\xbf\xbds",
	// common Kubernetes-ish values
	"10m0s", "1m0s", "0.5s", "720h", "8760h", "1h0m0s", "24h", "500ms", "100us", "2s500ms",
}

var formatValues = []int64{
	0, 1, -1, 2, 999, 1000, 1001, 1100, 2200, 999999, 1000000, 1000001, 3300000,
	999999999, 1000000000, 1000000001, 1500000000, 60000000000, 61000000000,
	3599999999999, 3600000000000, 3661000000000, 5400000000000, 86400000000000,
	-2000, -1500000, -60000000000, -3661001001001,
	math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	rng := rand.New(rand.NewSource(20240101))
	units := []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}
	inputs := append([]string{}, parseInputs...)
	for i := 0; i < 400; i++ {
		var b strings.Builder
		if rng.Intn(4) == 0 {
			b.WriteString("-")
		}
		for n := rng.Intn(3) + 1; n > 0; n-- {
			fmt.Fprintf(&b, "%d", rng.Int63n(1<<uint(rng.Intn(40)+1)))
			if rng.Intn(3) == 0 {
				fmt.Fprintf(&b, ".%0*d", rng.Intn(12)+1, rng.Int63n(1000000))
			}
			b.WriteString(units[rng.Intn(len(units))])
		}
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		d, err := time.ParseDuration(in)
		if err != nil {
			fmt.Fprintf(out, "P\t%s\terr\t%s\n", hex.EncodeToString([]byte(in)), err)
		} else {
			fmt.Fprintf(out, "P\t%s\tok\t%d\n", hex.EncodeToString([]byte(in)), int64(d))
		}
	}
	values := append([]int64{}, formatValues...)
	for i := 0; i < 400; i++ {
		v := rng.Int63() >> uint(rng.Intn(63))
		if rng.Intn(2) == 0 {
			v = -v
		}
		values = append(values, v)
	}
	for _, v := range values {
		fmt.Fprintf(out, "F\t%d\t%s\n", v, time.Duration(v).String())
	}
}
