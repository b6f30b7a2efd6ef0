package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPlanProcessTPCH4x is the whole `laxity plan` process, as a user
// runs it, on the 13-query sample at four times its rate: the binary's
// start, reading and validating the file against the CRDs, the search and
// the table. cpu-s/op is the process's user and system time, what it takes
// on one core.
func BenchmarkPlanProcessTPCH4x(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "laxity")
	if out, err := exec.Command("go", "build", "-o", bin, "../..").CombinedOutput(); err != nil {
		b.Fatalf("building laxity: %v\n%s", err, out)
	}
	sample, err := os.ReadFile(filepath.Join(samplesDir, "tpch.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	const rate = `ratePerSecond: "9500"`
	if n := bytes.Count(sample, []byte(rate)); n != 13 {
		b.Fatalf("the sample has %d queries at %s, want 13", n, rate)
	}
	file := filepath.Join(dir, "tpch-4x.yaml")
	if err := os.WriteFile(file, bytes.ReplaceAll(sample, []byte(rate), []byte(`ratePerSecond: "38000"`)), 0o600); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "plan", "-f", file)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("laxity plan: %v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
