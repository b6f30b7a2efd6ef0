package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeFile(t *testing.T) {
	type doc struct {
		Document, Line int
		Value          any
	}
	tests := []struct {
		name     string
		data     string
		want     []doc
		wantErrs []string
	}{
		{name: "empty file"},
		{name: "comments and separators only", data: "# a\n---\n\n---   # b\n"},
		{
			name: "one document",
			data: "a: 1\nb: x\n",
			want: []doc{{1, 1, map[string]any{"a": int64(1), "b": "x"}}},
		},
		{
			name: "leading separator and comments",
			data: "# header\n---\n# about a\na: 1\n",
			want: []doc{{1, 4, map[string]any{"a": int64(1)}}},
		},
		{
			name: "empty documents are skipped and not counted",
			data: "a: 1\n---\n---\n# nothing\n---\nb: 2.5\n--- # trailing comment\n",
			want: []doc{{1, 1, map[string]any{"a": int64(1)}}, {2, 6, map[string]any{"b": 2.5}}},
		},
		{
			name: "null document is skipped but counted",
			data: "~\n---\na: 1\n",
			want: []doc{{2, 3, map[string]any{"a": int64(1)}}},
		},
		{
			name: "content on the separator line",
			data: "--- {a: 1}\n--- [1, 2]\n",
			want: []doc{{1, 1, map[string]any{"a": int64(1)}}, {2, 2, []any{int64(1), int64(2)}}},
		},
		{
			name: "four dashes are not a separator",
			data: "a: |\n  x\n  ----\n",
			want: []doc{{1, 1, map[string]any{"a": "x\n----\n"}}},
		},
		{
			name: "crlf and byte order mark",
			data: "\xef\xbb\xbfa: 1\r\n---\r\nb: 2\r\n",
			want: []doc{{1, 1, map[string]any{"a": int64(1)}}, {2, 3, map[string]any{"b": int64(2)}}},
		},
		{
			name: "json",
			data: "{\n\t\"a\": [1, 2.0, \"x\"],\n\t\"b\": null\n}\n",
			want: []doc{{1, 1, map[string]any{"a": []any{int64(1), int64(2), "x"}, "b": nil}}},
		},
		{
			name: "yaml 1.1 as kubectl reads it",
			data: "a: yes\nb: 0x10\nc: 2026-12-01T00:00:00Z\nd: '1'\n",
			want: []doc{{1, 1, map[string]any{"a": true, "b": int64(16), "c": "2026-12-01T00:00:00Z", "d": "1"}}},
		},
		{
			name:     "syntax error names the file line",
			data:     "a: 1\n---\n# c\nb: [\n\n---\nc: 3\n",
			want:     []doc{{1, 1, map[string]any{"a": int64(1)}}, {3, 7, map[string]any{"c": int64(3)}}},
			wantErrs: []string{"f.yaml: document 2: line 5: invalid yaml: did not find expected node content"},
		},
		{
			name:     "syntax error on the first line of a document",
			data:     "a: 1\n---\nb: c: d\n",
			want:     []doc{{1, 1, map[string]any{"a": int64(1)}}},
			wantErrs: []string{"f.yaml: document 2: line 3: invalid yaml: mapping values are not allowed in this context"},
		},
		{
			name: "duplicate keys, each on its line",
			data: "x: 0\n---\na: 1\na: 2\nb:\n  c: 1\n  c: 2\n",
			want: []doc{{1, 1, map[string]any{"x": int64(0)}}},
			wantErrs: []string{
				`f.yaml: document 2: line 4: invalid yaml: key "a" already set in map`,
				`f.yaml: document 2: line 7: invalid yaml: key "c" already set in map`,
			},
		},
		{
			name:     "control characters",
			data:     "a: \x01\n",
			wantErrs: []string{"f.yaml: document 1: line 1: invalid yaml: control characters are not allowed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, errs := decodeFile("f.yaml", []byte(tt.data))
			var got []doc
			for _, d := range docs {
				if d.source.File != "f.yaml" {
					t.Errorf("source file = %q", d.source.File)
				}
				got = append(got, doc{d.source.Document, d.source.Line, d.value})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decodeFile: documents mismatch (-want +got):\n%s", diff)
			}
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, e.Error())
			}
			if diff := cmp.Diff(tt.wantErrs, gotErrs); diff != "" {
				t.Errorf("decodeFile: errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
