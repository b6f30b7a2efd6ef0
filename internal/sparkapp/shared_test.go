package sparkapp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func shared(s Step, members ...string) Step { s.Members = members; return s }

// TestSharedBatchContract holds a shared batch to its contract: one
// object, named by its first member, whose annotations, arguments and
// Spark settings name every member and each member's own result location,
// the one its merges read; and StepOf reads it all back.
func TestSharedBatchContract(t *testing.T) {
	s := retry(shared(batch(3, 100, 200), "q1", "q2", "q3"), 1)
	app, err := Render(query(minimalTemplate), schedule(), s, locations)
	if err != nil {
		t.Fatal(err)
	}
	if app.GetName() != "q1-b3-r1" {
		t.Errorf("name %s, want the first member's q1-b3-r1", app.GetName())
	}
	wantResults := map[string]string{}
	for _, m := range s.Members {
		loc, err := ResultLocation(locations.ResultRoot, "analytics", m, s)
		if err != nil {
			t.Fatal(err)
		}
		wantResults[m] = loc
	}
	a := app.GetAnnotations()
	if a[AnnotationMembers] != "q1,q2,q3" {
		t.Errorf("members annotation %q", a[AnnotationMembers])
	}
	if want := "q1=" + wantResults["q1"] + ",q2=" + wantResults["q2"] + ",q3=" + wantResults["q3"]; a[AnnotationMemberResults] != want {
		t.Errorf("member results %q, want %q", a[AnnotationMemberResults], want)
	}
	argList, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "arguments")
	args := strings.Join(argList, " ")
	for _, want := range []string{"--laxity-members=q1,q2,q3", "--laxity-output-q2=" + wantResults["q2"], "--laxity-output=" + wantResults["q1"]} {
		if !strings.Contains(args, want) {
			t.Errorf("arguments %q lack %q", args, want)
		}
	}
	conf, _, _ := unstructured.NestedStringMap(app.Object, "spec", "sparkConf")
	if conf["spark.laxity.members"] != "q1,q2,q3" || conf["spark.laxity.output.q3"] != wantResults["q3"] {
		t.Errorf("sparkConf %v: want the members and each one's output", conf)
	}
	q, got, err := StepOf(app)
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.MemberResults = wantResults
	want.ReadyNodes = 0
	if q != "q1" {
		t.Errorf("query %s, want q1", q)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StepOf (-want +got):\n%s", diff)
	}
	if slice := SliceOf(app); slice != nil {
		t.Errorf("the members' annotations read as an input slice: %v", slice)
	}
}

func TestSharedBatchRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		step Step
		want string
	}{
		{"one member", shared(batch(0, 0, 10), "q1"), "two queries or more"},
		{"led by another query", shared(batch(0, 0, 10), "q2", "q1"), "q1 first"},
		{"a member twice", shared(batch(0, 0, 10), "q1", "q2", "q2"), "listed twice"},
		{"a member that is no name", shared(batch(0, 0, 10), "q1", "Q,2"), "not a query name"},
		{"a shared merge", shared(final(0, "s3a://r/b0"), "q1", "q2"), "only a batch is shared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(query(minimalTemplate), schedule(), tc.step, locations)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestStepOfRefusesMalformedMembers(t *testing.T) {
	for _, tc := range []struct {
		name             string
		members, results string
	}{
		{"members without results", "q1,q2", "-"},
		{"results without members", "-", "q1=a,q2=b"},
		{"a result missing", "q1,q2", "q1=a"},
		{"results out of order", "q1,q2", "q2=b,q1=a"},
		{"led by another query", "q2,q1", "q2=b,q1=a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := Render(query(minimalTemplate), schedule(), shared(batch(0, 0, 10), "q1", "q2"), locations)
			if err != nil {
				t.Fatal(err)
			}
			a := app.GetAnnotations()
			for key, v := range map[string]string{AnnotationMembers: tc.members, AnnotationMemberResults: tc.results} {
				if v == "-" {
					delete(a, key)
				} else {
					a[key] = v
				}
			}
			app.SetAnnotations(a)
			if _, _, err := StepOf(app); err == nil {
				t.Error("StepOf read it")
			}
		})
	}
}

// FuzzStepOfMembers holds the reading of a shared batch's members back to
// an error or to members that make the object's own contract: never a
// panic, never a member list Render would refuse, every member with a
// result location.
func FuzzStepOfMembers(f *testing.F) {
	f.Add("q1,q2", "q1=s3a://r/q1/q1-b0,q2=s3a://r/q2/q2-b0")
	f.Add("q1,q1", "q1=a,q1=b")
	f.Add("q2,q1", "q2=a,q1=b")
	f.Add("q1,", "q1=a,=b")
	f.Add("q1,q2,q3", "q1=a=b,q2=c,q3=d")
	f.Fuzz(func(t *testing.T, members, results string) {
		app, err := Render(query(minimalTemplate), schedule(), shared(batch(0, 0, 10), "q1", "q2"), locations)
		if err != nil {
			t.Fatal(err)
		}
		a := app.GetAnnotations()
		a[AnnotationMembers], a[AnnotationMemberResults] = members, results
		app.SetAnnotations(a)
		_, s, err := StepOf(app)
		if err != nil {
			return
		}
		if err := checkMembers("q1", s.Members); err != nil {
			t.Fatalf("read members %q that Render refuses: %v", s.Members, err)
		}
		for _, m := range s.Members {
			if s.MemberResults[m] == "" {
				t.Fatalf("member %s has no result location in %q", m, results)
			}
		}
		if len(s.MemberResults) != len(s.Members) {
			t.Fatalf("results %v for members %v", s.MemberResults, s.Members)
		}
	})
}
