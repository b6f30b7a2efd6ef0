package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes as a manifest file: Read never panics,
// returns either objects or an error, never both, and every error line names
// the file. The seeds are the samples, the API tests' valid and invalid
// manifests and YAML oddities.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{
		filepath.Join(samplesDir, "*.yaml"),
		filepath.Join(apiValidDir, "*.yaml"),
		filepath.Join(apiInvalidDir, "*.yaml"),
	} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, string(data))
		}
	}
	seeds = append(seeds,
		schedule+"---\n"+query,
		"",
		"---\n---\n",
		"# only a comment\n",
		"~\n",
		"- 1\n- 2\n",
		"apiVersion: v1\nkind: List\nitems:\n- "+indent(schedule)+"- 3\n",
		"apiVersion: laxity.dev/v1alpha1\nkind: Nope\n",
		"apiVersion: laxity.dev/v1alpha1\nkind: IntermittentQuery\nmetadata: 5\n",
		"apiVersion: laxity.dev/v1alpha1\nkind: IntermittentQuery\nmetadata: {name: x, namespace: 7}\nspec: []\n",
		"apiVersion: laxity.dev/v9\nkind: ElasticSchedule\n",
		"a: &a [*a]\n",
		"a: 1\na: 2\n",
		"{\"apiVersion\": \"laxity.dev/v1alpha1\", \"kind\": \"ElasticSchedule\", \"metadata\": {\"name\": \"x\"}, \"spec\": null}",
		"a: [\n",
		"\xef\xbb\xbf--- {a: 1e400}\n",
		strings.Replace(query, "ratePerSecond: \"9500\"", "ratePerSecond: \"1e400\"", 1),
		query+"---\n"+query,
	)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Read(File{Name: "fuzz.yaml", Data: data})
		if (set == nil) == (err == nil) {
			t.Fatalf("Read: got set %v and error %v, want exactly one", set, err)
		}
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Read: error %v is not a non-empty ErrorList", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.yaml: ") {
					t.Fatalf("Read: error line %q does not name the file", line)
				}
			}
			return
		}
		for _, s := range set.Schedules {
			if s.Object == nil || s.Source.File != "fuzz.yaml" || s.Source.Document < 1 {
				t.Fatalf("Read: bad schedule %+v", s)
			}
		}
		for _, q := range set.Queries {
			if q.Object == nil || q.Source.File != "fuzz.yaml" || q.Source.Document < 1 || q.Object.Namespace == "" {
				t.Fatalf("Read: bad query %+v", q)
			}
		}
	})
}
