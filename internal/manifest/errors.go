package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Source says where an object was read from.
type Source struct {
	// File is the path of the file, as given to Load or found by walking a
	// directory given to Load.
	File string
	// Document is the 1-based index of the YAML document in File, counting
	// only documents that are not empty (blank or comments only). 0 when
	// the problem concerns the whole file.
	Document int
	// Item is the 1-based index of the object in the items of a v1 List
	// document; 0 when the document is not a List.
	Item int
	// Line is the 1-based line in File where the document starts, or, for
	// YAML syntax errors, where the error is; 0 when unknown.
	Line int
}

// String renders the source as "file: document N" (", item M" for List
// items).
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.File)
	if s.Document > 0 {
		fmt.Fprintf(&b, ": document %d", s.Document)
	}
	if s.Item > 0 {
		fmt.Fprintf(&b, ", item %d", s.Item)
	}
	return b.String()
}

// compareSources orders sources by file path, then document, then item.
func compareSources(a, b Source) int {
	return cmp.Or(
		strings.Compare(a.File, b.File),
		cmp.Compare(a.Document, b.Document),
		cmp.Compare(a.Item, b.Item),
	)
}

// Error is one problem found while loading manifests. Its message names the
// file, the document, the object (kind and namespace/name) when known and,
// for validation errors, the field path.
type Error struct {
	// Source is where the problem is.
	Source Source
	// Kind, Namespace and Name identify the object, when known.
	Kind, Namespace, Name string
	// Syntax is true for YAML or JSON syntax errors; the message then names
	// Source.Line.
	Syntax bool
	// Err is the underlying error; a *field.Error for validation errors.
	Err error
}

// Error renders e on one line, e.g.
// "config/samples/bad.yaml: document 2: IntermittentQuery analytics/q1: spec.deadline: Invalid value: ...".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	if e.Syntax && e.Source.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Source.Line)
	}
	if e.Kind != "" {
		b.WriteString(": ")
		b.WriteString(e.Kind)
		b.WriteString(" ")
		name := e.Name
		if name == "" {
			name = "(unnamed)"
		}
		if e.Namespace != "" {
			b.WriteString(e.Namespace)
			b.WriteString("/")
		}
		b.WriteString(name)
	}
	b.WriteString(": ")
	b.WriteString(oneLine(errorText(e.Err)))
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// errorText renders a field error without an empty field path.
func errorText(err error) string {
	var fe *field.Error
	if errors.As(err, &fe) && (fe.Field == "" || fe.Field == "<nil>") {
		return fe.ErrorBody()
	}
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// oneLine keeps each error on a single line of the combined message.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
}

// ErrorList is every problem found while loading manifests, in source
// order. Its message has one line per problem.
type ErrorList []*Error

// Error renders one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors, for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// sortErrors orders errors by source, keeping the order in which errors of
// one source were found.
func sortErrors(l ErrorList) {
	slices.SortStableFunc(l, func(a, b *Error) int { return compareSources(a.Source, b.Source) })
}
