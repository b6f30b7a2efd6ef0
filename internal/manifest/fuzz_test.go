package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes as a manifest file: Read never panics,
// returns either objects or an error, never both, and every error line names
// the file. The corpus starts from the samples, the API tests' valid and invalid
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
	// The same files as Windows editors write them, which are transcoded
	// before they are split.
	for _, s := range seeds[:min(len(seeds), 8)] {
		f.Add(utf16File(s, binary.LittleEndian))
		f.Add(utf16File(s, binary.BigEndian))
	}
	f.Add([]byte("\xff\xfe\x00"))     // an odd number of UTF-16 bytes
	f.Add([]byte("\xfe\xff\xd8\x00")) // a lone surrogate
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

// FuzzReadLimited reads arbitrary bytes, UTF-16 or not, through the size
// cap and the loader: within the limit the bytes come back whole, beyond it
// the error is ErrTooLarge and nothing is returned; and what is read
// decodes without panicking.
func FuzzReadLimited(f *testing.F) {
	f.Add([]byte(nodePool("p1")), uint16(4096))
	f.Add(utf16File(fourPools(), binary.LittleEndian), uint16(64))
	f.Add(utf16File(fourPools(), binary.BigEndian), uint16(4096))
	f.Add([]byte("\xef\xbb\xbf"+nodePool("p1")), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		got, err := readLimited(bytes.NewReader(data), int64(limit))
		switch {
		case len(data) > int(limit):
			if !errors.Is(err, ErrTooLarge) || got != nil {
				t.Fatalf("%d bytes, limit %d: got %d bytes, %v; want ErrTooLarge", len(data), limit, len(got), err)
			}
			return
		case err != nil || !bytes.Equal(got, data):
			t.Fatalf("%d bytes, limit %d: got %d bytes, %v; want them all", len(data), limit, len(got), err)
		}
		_, _ = NewLoader(mustNodePoolValidator(t)).Read(File{Name: "fuzz.yaml", Data: got}) // must not panic
	})
}
