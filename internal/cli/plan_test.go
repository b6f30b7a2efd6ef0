package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/laxity-dev/laxity/internal/baseline"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
)

const samplesDir = "../../config/samples"

// sampleSchedules counts the ElasticSchedules of the samples.
func sampleSchedules(t *testing.T) int {
	t.Helper()
	set, err := manifest.Load(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	return len(set.Schedules)
}

// plannedSampleSchedules counts the ElasticSchedules of the samples that
// plan without --origin: those some IntermittentQuery names.
func plannedSampleSchedules(t *testing.T) int {
	t.Helper()
	set, err := manifest.Load(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range set.Schedules {
		if len(set.QueriesFor(s.Object.Namespace, s.Object.Name)) > 0 {
			n++
		}
	}
	return n
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, "laxity", "", args...)
}

// runWith runs the command line as the program named program (laxity, or
// kubectl-laxity for the kubectl plugin), with stdin on standard input.
func runWith(t *testing.T, program, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(program, args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func TestPlanSampleTable(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"ElasticSchedule analytics/tpch, origin 2026-12-01T00:00:00Z",
		"FACTOR  INN:2    INN:4    INN:10   INN:14   INN:20",
		"*", // the chosen cell
		"tpch-q1", "cq4",
		"AT", "NODES", "REQUESTED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A query over several inputs shows each input's tuples and the ranges of
// its first and last batch, which add up to the query's tuples.
func TestPlanJoinSampleListsEachInput(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch-join.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"Queries over several inputs: every batch covers the same interval of time on each input.",
		"QUERY     INPUT     TUPLES    FIRST BATCH",
		// An hour at 1,900 and 7,600 tuples a second.
		"tpch-q12  orders    6840000   [0, ",
		"tpch-q12  lineitem  27360000  [0, ",
		"tpch-q4   orders    6840000 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml")); code != exitOK || strings.Contains(out, "several inputs") {
		t.Errorf("a workload of queries over one input lists no inputs (exit %d):\n%s", code, out)
	}
}

// TestPlanJSONHasEveryField checks the document against the field list of
// docs/design.md ("The plan document"): other programs read it, so every field must be there.
func TestPlanJSONHasEveryField(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("output is not a list of one plan (%v):\n%s", err, out)
	}
	doc := list.Items[0]
	requireKeys(t, "document", doc, "origin", "chosen", "candidates", "queries", "steps", "nodes", "requests", "maxSupportedRateFactor", "searchSeconds")
	requireKeys(t, "chosen", doc["chosen"].(map[string]any), "initialNodes", "batchSizeFactor", "cost", "executableCost", "maxNodes", "feasible")
	for name, keys := range map[string][]string{
		"candidates": {"initialNodes", "batchSizeFactor", "cost", "maxNodes", "feasible"},
		"queries":    {"name", "batchSize", "batches", "finish", "deadline", "slack"},
		"steps":      {"query", "kind", "index", "fromTuple", "toTuple", "inputs", "ready", "start", "end", "nodes"},
		"nodes":      {"at", "nodes"},
		"requests":   {"at", "nodes"},
	} {
		items := doc[name].([]any)
		if len(items) == 0 {
			t.Errorf("%s is empty", name)
			continue
		}
		requireKeys(t, name+"[0]", items[0].(map[string]any), keys...)
	}
	if doc["origin"] != "2026-12-01T00:00:00Z" {
		t.Errorf("origin = %v", doc["origin"])
	}
	if _, failed := doc["chosen"].(map[string]any)["failure"]; failed {
		t.Error("a feasible plan reports a failure")
	}
}

func requireKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %q", what, k)
		}
	}
}

func TestPlanSeveralSchedulesPrintsAList(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", samplesDir, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	docs := plansIn(t, out)
	if want := plannedSampleSchedules(t); len(docs) != want {
		t.Errorf("got %d documents, want one per sample schedule with IntermittentQueries (%d)", len(docs), want)
	}
	if !strings.Contains(errOut, "ElasticSchedule analytics/sales: not planned: only RecurringQueries name it; give --origin") {
		t.Errorf("stderr does not say the recurring sample was left out:\n%s", errOut)
	}
	for _, d := range docs {
		if !d.Chosen.Feasible {
			t.Errorf("sample plan from %v is infeasible", d.Origin)
		}
	}
}

func TestPlanOneScheduleWithOrigin(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", samplesDir, "-o", "json", "--schedule", "analytics/nightly", "--origin", "2026-11-30T23:00:00Z")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	d := onePlanIn(t, out)
	// The first window opens an hour after the origin: nothing runs before.
	if d.Steps[0].Start < 3600 {
		t.Errorf("first step starts at %v s, before the first window opens at 3600 s", d.Steps[0].Start)
	}
}

func TestPlanInfeasibleExitsThreeAndStillPrints(t *testing.T) {
	code, out, _ := run(t, "plan", "-f", "testdata/infeasible.yaml", "-o", "json")
	if code != exitInfeasible {
		t.Fatalf("exit %d, want %d", code, exitInfeasible)
	}
	d := onePlanIn(t, out)
	if d.Chosen.Feasible || d.Chosen.Failure == nil || d.Chosen.Failure.Query != "too-late" || d.Chosen.Failure.LateSeconds <= 0 {
		t.Errorf("chosen = %+v, want infeasible with too-late late", d.Chosen)
	}
	code, out, _ = run(t, "plan", "-f", "testdata/infeasible.yaml")
	if code != exitInfeasible || !strings.Contains(out, "INFEASIBLE") || !strings.Contains(out, "too-late is") {
		t.Errorf("table: exit %d, output:\n%s", code, out)
	}
}

func TestPlanBadInputNamesFileObjectAndField(t *testing.T) {
	dir := t.TempDir()
	bad, err := os.ReadFile(filepath.Join(samplesDir, "non-overlapping-windows.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(bad), `deadline: "2026-12-01T03:10:00Z"`, `deadline: "2026-12-01T02:30:00Z"`, 1)
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"CEL rule", []string{"plan", "-f", path}, []string{path, "IntermittentQuery analytics/fraud-features", "spec.deadline"}},
		{"orphan query", []string{"plan", "-f", "testdata/orphan-query.yaml", "-f", filepath.Join(samplesDir, "tpch.yaml")}, []string{"orphan-query.yaml", "IntermittentQuery analytics/orphan", "spec.scheduleName", `"missing"`}},
		{"missing file", []string{"plan", "-f", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"no file", []string{"plan"}, []string{"-f FILE|DIR|- or --kubeconfig FILE is required"}},
		{"output", []string{"plan", "-f", path, "-o", "xml"}, []string{"-o must be table, json or yaml"}},
		{"origin", []string{"plan", "-f", path, "--origin", "tomorrow"}, []string{"--origin", "RFC 3339"}},
		{"unknown schedule", []string{"plan", "-f", samplesDir, "--schedule", "analytics/nope"}, []string{"--schedule", "analytics/nope"}},
		{"unknown flag", []string{"plan", "--bogus"}, []string{"unknown flag: --bogus"}},
		{"unknown command", []string{"schedule"}, []string{`unknown command "schedule"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != exitInvalid {
				t.Errorf("exit %d, want %d", code, exitInvalid)
			}
			if out != "" {
				t.Errorf("bad input printed a plan:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stack trace on user input:\n%s", errOut)
			}
		})
	}
}

func TestPlanIsDeterministicExceptSearchTime(t *testing.T) {
	var outputs []string
	for i := 0; i < 3; i++ {
		_, out, _ := run(t, "plan", "-f", samplesDir, "-o", "json")
		outputs = append(outputs, stripSearchSeconds(t, out))
	}
	if len(slices.Compact(outputs)) != 1 {
		t.Error("planning the samplesDir twice gave different documents")
	}
}

func TestPlanSVGDrawsTheChosenPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tpch.svg")
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "--svg", path)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "ElasticSchedule analytics/tpch") {
		t.Errorf("--svg replaced the table instead of adding to it:\n%s", out)
	}
	texts := svgTexts(t, path)
	// "window" is in the legend only when the workload's windows reached
	// the figure.
	for _, want := range []string{"ElasticSchedule analytics/tpch", "tpch-q1", "cq4", "window", "planned nodes", "requested nodes"} {
		if !slices.Contains(texts, want) {
			t.Errorf("%s has no text %q", path, want)
		}
	}
}

func TestPlanSVGOfAnInfeasiblePlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tight.svg")
	code, _, _ := run(t, "plan", "-f", "testdata/infeasible.yaml", "--svg", path)
	if code != exitInfeasible {
		t.Fatalf("exit %d, want %d", code, exitInfeasible)
	}
	texts := svgTexts(t, path)
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "INFEASIBLE: too-late is") }) {
		t.Errorf("%s does not say which query is late: %q", path, texts)
	}
}

func TestPlanSVGBadUse(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "plan.svg")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unwritable file", []string{"plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "--svg", missing}, []string{"--svg", missing, "no such file or directory"}},
		{"several schedules", []string{"plan", "-f", samplesDir, "--svg", filepath.Join(t.TempDir(), "all.svg")}, []string{"--svg draws one schedule", fmt.Sprintf("hold %d", sampleSchedules(t)), "--schedule"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != exitInvalid {
				t.Errorf("exit %d, want %d", code, exitInvalid)
			}
			if out != "" {
				t.Errorf("a failed --svg still printed the plan:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// svgTexts reads the SVG file at path and returns its texts in order.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	var inText bool
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return texts
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			inText = el.Name.Local == "text"
			if inText {
				texts = append(texts, "")
			}
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		case xml.EndElement:
			inText = false
		}
	}
}

func TestPlanCompareSampleTable(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "--compare")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"ElasticSchedule analytics/tpch, origin 2026-12-01T00:00:00Z",
		"APPROACH", "COST", "MAX NODES", "DEADLINES MET",
		"\nelastic ", "\nfixed 2 ", "\nfixed 20 ", "\nllf-no-batching 2 ", "\nllf-no-batching 20 ",
		"\nreactive-autoscaler ", "\nmicro-batch-streaming ",
		// The legend, with the sample's numbers.
		"elastic: laxity's plan", "fixed N:", "llf-no-batching N:", "reactive-autoscaler:", "micro-batch-streaming:",
		"starts at\n  2 nodes", "arrives 6m0s later", "minimum of 1m0s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Candidates:") {
		t.Errorf("--compare printed the plan too:\n%s", out)
	}
}

// TestPlanCompareSampleElasticIsCheapest is the paper's claim for its
// baselines (docs/experiments.md), on the TPC-H-shaped workload: no approach that meets every deadline costs less than
// laxity's plan. On this sample a fixed pool of 2 nodes runs the very same
// schedule and ties.
func TestPlanCompareSampleElasticIsCheapest(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "--compare", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	cs := comparisonsIn(t, out)
	if len(cs) != 1 {
		t.Fatalf("%d comparisons, want 1:\n%.300s", len(cs), out)
	}
	c := cs[0]
	if c.Metadata != (scheduleMeta{Name: "tpch", Namespace: "analytics"}) || len(c.Results) != 13 {
		t.Fatalf("schedule %+v with %d results, want analytics/tpch with 13 (elastic, 5 fixed, 5 LLF, reactive, streaming)", c.Metadata, len(c.Results))
	}
	elastic := c.Results[0]
	if elastic.Baseline != baseline.Elastic || !elastic.DeadlinesMet {
		t.Fatalf("first result %+v, want a feasible elastic plan", elastic)
	}
	for _, r := range c.Results[1:] {
		if r.DeadlinesMet && r.Cost < elastic.Cost-1e-9 {
			t.Errorf("%s meets every deadline for %.4f, less than the elastic plan's %.4f", r.Label(), r.Cost, elastic.Cost)
		}
		if r.DeadlinesMet == (r.Late != nil) {
			t.Errorf("%s: deadlines met %v but late %+v", r.Label(), r.DeadlinesMet, r.Late)
		}
	}
}

func TestPlanCompareSeveralSchedulesPrintsAList(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", samplesDir, "--compare", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	cs := comparisonsIn(t, out)
	if want := plannedSampleSchedules(t); len(cs) != want {
		t.Errorf("got %d comparisons, want one per sample schedule (%d)", len(cs), want)
	}
}

func TestPlanCompareInfeasibleExitsThreeAndStillPrints(t *testing.T) {
	code, out, _ := run(t, "plan", "-f", "testdata/infeasible.yaml", "--compare")
	if code != exitInfeasible {
		t.Fatalf("exit %d, want %d", code, exitInfeasible)
	}
	if !strings.Contains(out, "no: too-late") {
		t.Errorf("the table does not say the elastic plan is late:\n%s", out)
	}
}

func TestPlanCompareBadFlags(t *testing.T) {
	tpch := filepath.Join(samplesDir, "tpch.yaml")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a boolean", []string{"plan", "-f", tpch, "--compare=maybe"}, `invalid argument "maybe" for "--compare"`},
		{"output", []string{"plan", "-f", tpch, "--compare", "-o", "xml"}, "-o must be table, json or yaml"},
		{"no file", []string{"plan", "--compare"}, "-f FILE|DIR|- or --kubeconfig FILE is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			if code != exitInvalid || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, no output, %q", code, out, errOut, exitInvalid, tc.want)
			}
		})
	}
}

// BenchmarkCompareTPCH is `laxity plan --compare` on the 13-query sample
// without the loading: the plan and every baseline.
func BenchmarkCompareTPCH(b *testing.B) {
	set, err := manifest.Load(filepath.Join(samplesDir, "tpch.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	w, _, _, err := planSchedule(context.Background(), set, set.Schedules[0], nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		plan, err := planner.Plan(w)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := baseline.Compare(w, plan); err != nil {
			b.Fatal(err)
		}
	}
}

// A RecurringQuery plans as its next windowsAhead windows from --origin,
// each an IntermittentQuery named after its start.
func TestPlanRecurring(t *testing.T) {
	sample := filepath.Join(samplesDir, "recurring.yaml")
	code, out, errOut := run(t, "plan", "-f", sample, "--origin", "2026-12-01T08:03:00Z", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	doc := onePlanIn(t, out)
	var names []string
	for _, q := range doc.Queries {
		names = append(names, q.Name)
	}
	// From 08:03 the next two starts are 08:10 and 08:20; their deadlines
	// are 4 minutes after each 5-minute window, from the origin.
	if want := []string{"orders-by-region-202612010810", "orders-by-region-202612010820"}; !slices.Equal(names, want) {
		t.Errorf("planned %v, want %v", names, want)
	}
	if len(doc.Queries) == 2 && (doc.Queries[0].Deadline != 960 || doc.Queries[1].Deadline != 1560) {
		t.Errorf("deadlines %v and %v s after the origin, want 960 and 1560", doc.Queries[0].Deadline, doc.Queries[1].Deadline)
	}
	_, again, _ := run(t, "plan", "-f", sample, "--origin", "2026-12-01T08:03:00Z", "-o", "json")
	if stripSearchSeconds(t, again) != stripSearchSeconds(t, out) {
		t.Error("planning the same files twice gave different documents")
	}

	code, _, errOut = run(t, "plan", "-f", sample)
	if code != exitInvalid || !strings.Contains(errOut, "RecurringQuery analytics/orders-by-region: --origin is required") {
		t.Errorf("without --origin: exit %d, stderr %q; want exit %d naming --origin", code, errOut, exitInvalid)
	}
}

// A RecurringQuery in a zone that skipped a whole local day plans (the
// cron library's own search never returns there): Pacific/Apia went from
// 2011-12-29 to 2011-12-31, so Friday 30 December had no start.
func TestPlanRecurringSkippedDay(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(samplesDir, "recurring.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(strings.Replace(string(data), `schedule: "*/10 * * * *"`, `schedule: "0 0 * * FRI"`, 1), "timeZone: UTC", "timeZone: Pacific/Apia", 1)
	file := filepath.Join(t.TempDir(), "apia.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "plan", "-f", file, "--origin", "2011-12-25T00:00:00Z", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	plan := onePlanIn(t, out)
	var names []string
	for _, q := range plan.Queries {
		names = append(names, q.Name)
	}
	// Friday 2011-12-23 00:00 -10:00 was before the origin; then Friday
	// 2012-01-06 00:00 +14:00 and 2012-01-13.
	if want := []string{"orders-by-region-201201051000", "orders-by-region-201201121000"}; !slices.Equal(names, want) {
		t.Errorf("planned %v, want %v", names, want)
	}

	// A schedule with no start at all is an error naming the object and
	// the field.
	never := strings.Replace(doc, `schedule: "0 0 * * FRI"`, `schedule: "0 0 30 2 *"`, 1)
	if err := os.WriteFile(file, []byte(never), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "plan", "-f", file, "--origin", "2011-12-25T00:00:00Z")
	if code != exitInvalid || !strings.Contains(errOut, "RecurringQuery analytics/orders-by-region") || !strings.Contains(errOut, "spec.schedule") {
		t.Errorf("never-starting schedule: exit %d, stderr %q; want exit %d naming the object and spec.schedule", code, errOut, exitInvalid)
	}
}

// stripSearchSeconds is the output of plan -o json without the search
// time of each plan, the one field that changes from run to run.
func stripSearchSeconds(t *testing.T, doc string) string {
	t.Helper()
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(doc), &list); err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		delete(item, "searchSeconds")
	}
	data, _ := json.Marshal(list)
	return string(data)
}

// compactJSON is doc with its whitespace removed, to compare documents.
func compactJSON(t *testing.T, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// A SparkApplication template that laxity's rendering or the
// SparkApplication CRD rejects fails the plan, naming the query and the
// field, before anything runs.
func TestPlanRejectsABadSparkApplicationTemplate(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(samplesDir, "three-queries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"a field the CRD does not know", "driver: {cores: 1, memory: 2g}", "driver: {cores: 1, memory: 2g, coresPerTask: 3}", []string{"spec.sparkApplication.driver.coresPerTask"}},
		{"a type the CRD refuses", "driver: {cores: 1, memory: 2g}", "driver: {cores: one, memory: 2g}", []string{"spec.sparkApplication.driver.cores"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			broken := strings.Replace(string(sample), tc.from, tc.to, 1)
			if broken == string(sample) {
				t.Fatalf("the sample has no %q", tc.from)
			}
			if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, "plan", "-f", path)
			if code != exitInvalid || out != "" {
				t.Errorf("exit %d with output %q, want %d and none", code, out, exitInvalid)
			}
			for _, w := range append([]string{path, "IntermittentQuery"}, tc.want...) {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
