package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The README's tour of a plan shows what `laxity plan -f
// config/samples/tpch.yaml` prints, but for the measured search time: a
// change to the planner, the sample or the table that changes the output
// fails here until the README shows it.
func TestReadmePlanTourIsWhatPlanPrints(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	tour := bytes.Index(readme, []byte("\n## A tour of a plan\n"))
	if tour < 0 {
		t.Fatal("README.md has no section \"A tour of a plan\"")
	}
	const open, fence = "```text\n", "```\n"
	start := bytes.Index(readme[tour:], []byte(open))
	if start < 0 {
		t.Fatal("the tour has no text block")
	}
	block := readme[tour+start+len(open):]
	end := bytes.Index(block, []byte("\n"+fence))
	if end < 0 {
		t.Fatal("the tour's text block does not end")
	}
	block = block[:end+1]

	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	searchTime := regexp.MustCompile(`in [0-9.]+s\.`)
	want := searchTime.ReplaceAllString(out, "in (measured)s.")
	got := searchTime.ReplaceAllString(string(block), "in (measured)s.")
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("README.md's tour of a plan differs from what laxity plan prints (-printed +README):\n%s", diff)
	}
}
