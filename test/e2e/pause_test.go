//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/source"
)

// lockedBuffer is a buffer a process writes to while the spec reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// childNamed is the PID of the child of parent whose command is name, 0 if
// there is none (yet). It reads /proc, so the spec runs on Linux only.
func childNamed(parent int, name string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 || s[open+1:closing] != name {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == parent {
			return pid
		}
	}
	return 0
}

// The API server paused for 60 s mid-window: the demo's kube-apiserver is
// stopped with SIGSTOP and continued with SIGCONT while the 3-query sample
// runs on the demo's scaled clock (15 simulated seconds per real second, so
// the 30-minute window lasts 2 real minutes and the whole run about three).
// The pause is 15 simulated minutes, more than the slack of the tightest
// deadline, so deadlines may be missed; what must hold is that the manager
// stays up, resumes and finishes every query within the demo's horizon,
// each tuple in exactly one batch. (At a faster clock the pause outlasts
// the demo's horizon of 20 minutes after the last deadline.)
var _ = Describe("laxity demo with the API server paused", func() {
	const sample = "three-queries.yaml"

	It("resumes after 60 s of a stopped kube-apiserver mid-window and loses or repeats no tuple range", func(ctx SpecContext) {
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			Skip("finding the kube-apiserver process needs /proc")
		}
		dir := GinkgoT().TempDir()
		report := filepath.Join(dir, "r.json")
		var out lockedBuffer
		demo := exec.CommandContext(ctx, binary, "demo", "--workload", filepath.Join("..", "..", "config", "samples", sample),
			"--speed", "15", "--report", report)
		demo.Stdout, demo.Stderr = &out, &out
		Expect(demo.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- demo.Wait() }()

		var apiserver int
		Eventually(func() int {
			apiserver = childNamed(demo.Process.Pid, "kube-apiserver")
			return apiserver
		}).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).ShouldNot(BeZero(), "no kube-apiserver child of the demo:\n%s", &out)
		// The control plane comes up, the caches sync and the clock starts
		// 4 simulated minutes (16 s) before the window: 40 s on is early in
		// the window, which then stays open through the pause.
		Consistently(exited).WithTimeout(40*time.Second).ShouldNot(Receive(), "the demo ended before the pause:\n%s", &out)

		// envtest may have retried the start (a port taken): take the
		// process running now.
		apiserver = childNamed(demo.Process.Pid, "kube-apiserver")
		Expect(apiserver).NotTo(BeZero(), "no kube-apiserver child of the demo:\n%s", &out)
		Expect(syscall.Kill(apiserver, syscall.SIGSTOP)).To(Succeed())
		paused := time.Now()
		continued := false
		defer func() {
			if !continued {
				_ = syscall.Kill(apiserver, syscall.SIGCONT)
			}
		}()
		Consistently(exited).WithTimeout(60*time.Second).WithPolling(time.Second).ShouldNot(Receive(), "the demo exited while the API server was paused:\n%s", &out)
		Expect(syscall.Kill(apiserver, syscall.SIGCONT)).To(Succeed())
		continued = true
		AddReportEntry("pause", time.Since(paused).String())

		var err error
		Eventually(exited).WithTimeout(5 * time.Minute).Should(Receive(&err))
		AddReportEntry("demo output", out.String())
		// 0: every deadline met; 3: one was missed. Anything else is a crash.
		var exit *exec.ExitError
		if err != nil {
			Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
			Expect(exit.ExitCode()).To(Equal(3), "the demo did not finish:\n%s", &out)
		}
		Expect(out.String()).NotTo(ContainSubstring("panic"))

		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var doc planner.Document
		Expect(json.Unmarshal(data, &doc)).To(Succeed())
		set, err := manifest.Load(filepath.Join("..", "..", "config", "samples", sample))
		Expect(err).NotTo(HaveOccurred())
		Expect(doc.Queries).To(HaveLen(len(set.Queries)))
		for _, q := range set.Queries {
			src, err := source.FromSpec(q.Object, nil)
			Expect(err).NotTo(HaveOccurred())
			next, finals := int64(0), 0
			for _, s := range doc.Steps {
				if s.Query != q.Object.Name {
					continue
				}
				switch s.Kind {
				case planner.StepBatch:
					Expect(s.FromTuple).To(Equal(next), "%s batch %d does not start where the previous ended: a range lost or run twice", s.Query, s.Index)
					Expect(s.ToTuple).To(BeNumerically(">", s.FromTuple))
					next = s.ToTuple
				case planner.StepFinal:
					finals++
				}
			}
			Expect(next).To(Equal(src.Total()), "%s: the batches do not cover the window's tuples", q.Object.Name)
			Expect(finals).To(Equal(1), "%s: final merges", q.Object.Name)
		}
	})
})
