package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/laxity-dev/laxity/internal/planner"
)

// BenchmarkPlanProcessTPCH4x is the whole `laxity plan` process, as a user
// runs it, on the 13-query sample at four times its rate: the binary's
// start, reading and validating the file against the CRDs, the search and
// the table. cpu-s/op is the process's user and system time, what it takes
// on the benchmark's processors (one with -cpu 1); search-s/op the search's
// own share of it; bill/grid the plan's executable bill over the cheapest
// grid cell's.
func BenchmarkPlanProcessTPCH4x(b *testing.B) {
	benchmarkPlanProcess(b, tpch4x(b, 0))
}

// BenchmarkPlanProcessTPCH4xFine is BenchmarkPlanProcessTPCH4x with the
// stream's tuples arriving in finer units than the sample's files of 9,500
// (a tenth and a fifth of them): the grid is the same, and the reshaping
// moves batch boundaries among ten or five times as many places.
func BenchmarkPlanProcessTPCH4xFine(b *testing.B) {
	for _, unit := range []int{950, 1900} {
		b.Run(fmt.Sprintf("granularity=%d", unit), func(b *testing.B) {
			benchmarkPlanProcess(b, tpch4x(b, unit))
		})
	}
}

// BenchmarkPlanProcessTPCH4xFineSideBySide is BenchmarkPlanProcessTPCH4xFine
// in units of 950 tuples with steps side by side allowed
// (spec.planning.concurrency: Concurrent): the search in lanes, and the
// bill one step at a time that laxity plan prints beside it.
func BenchmarkPlanProcessTPCH4xFineSideBySide(b *testing.B) {
	file := tpch4x(b, 950)
	sample, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	const factors = "\n    batchSizeFactors:"
	if bytes.Count(sample, []byte(factors)) != 1 {
		b.Fatalf("the sample does not set spec.planning.batchSizeFactors once")
	}
	sample = bytes.Replace(sample, []byte(factors), []byte("\n    concurrency: Concurrent"+factors), 1)
	if err := os.WriteFile(file, sample, 0o600); err != nil {
		b.Fatal(err)
	}
	benchmarkPlanProcess(b, file)
}

// tpch4x writes the 13-query sample at four times its rate (38,000 tuples
// a second) into a temporary file, with arrival units of unit tuples
// instead of 9,500 when unit is not 0, and returns its path.
func tpch4x(b *testing.B, unit int) string {
	b.Helper()
	sample, err := os.ReadFile(filepath.Join(samplesDir, "tpch.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	replace := func(from, to string) {
		if n := bytes.Count(sample, []byte(from)); n != 13 {
			b.Fatalf("the sample has %d queries with %s, want 13", n, from)
		}
		sample = bytes.ReplaceAll(sample, []byte(from), []byte(to))
	}
	replace(`ratePerSecond: "9500"`, `ratePerSecond: "38000"`)
	if unit != 0 {
		replace(`granularity: 9500`, fmt.Sprintf("granularity: %d", unit))
	}
	file := filepath.Join(b.TempDir(), "tpch-4x.yaml")
	if err := os.WriteFile(file, sample, 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}

// benchmarkPlanProcess runs `laxity plan -f file` as a user does and
// reports its processor time, its search's and its bill against the grid's.
func benchmarkPlanProcess(b *testing.B, file string) {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "laxity")
	if out, err := exec.Command("go", "build", "-o", bin, "../..").CombinedOutput(); err != nil {
		b.Fatalf("building laxity: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "plan", "-f", file, "-o", "json").Output()
	if err != nil {
		b.Fatalf("laxity plan -o json: %v\n%s", err, out)
	}
	var list struct {
		Items []planner.Document `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list.Items) != 1 {
		b.Fatalf("laxity plan -o json printed no list of one plan (%v):\n%.300s", err, out)
	}
	doc := list.Items[0]
	grid := math.Inf(1)
	for _, c := range doc.Candidates {
		if c.Feasible {
			grid = min(grid, c.ExecutableCost)
		}
	}
	searched := regexp.MustCompile(`Searched \d+ candidates in ([0-9.]+)s`)
	var cpu time.Duration
	search := 0.0
	// The process gets the benchmark's processors (-cpu): with -cpu 1 it
	// runs on one, where a spare one would have the collector mark on it
	// in time the process does not wait for but is billed.
	procs := fmt.Sprintf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0))
	for b.Loop() {
		cmd := exec.Command(bin, "plan", "-f", file)
		cmd.Env = append(os.Environ(), procs)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("laxity plan: %v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		m := searched.FindSubmatch(out)
		if m == nil {
			b.Fatalf("laxity plan printed no search time:\n%s", out)
		}
		seconds, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			b.Fatal(err)
		}
		search += seconds
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(search/float64(b.N), "search-s/op")
	b.ReportMetric(doc.Chosen.ExecutableCost/grid, "bill/grid")
}
