package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// rawDocument is one decoded, non-empty document of a file.
type rawDocument struct {
	source Source
	// value is what the document decodes to, as the API server decodes a
	// JSON request body: maps, slices, strings, bools, int64, float64, nil.
	value any
}

// decodeFile splits a file into documents and decodes each (see
// decodeChunk). A document that fails to parse is reported and the others
// are still decoded. Documents that are empty (blank, comments only, or
// null) are skipped.
func decodeFile(file string, data []byte) ([]rawDocument, ErrorList) {
	var (
		docs []rawDocument
		errs ErrorList
	)
	for _, c := range splitFile(file, data) {
		doc, cerrs := c.decode()
		errs = append(errs, cerrs...)
		if doc.value != nil {
			docs = append(docs, doc)
		}
	}
	return docs, errs
}

// splitFile splits a file into the chunks of its non-empty documents.
func splitFile(file string, data []byte) []chunk {
	chunks := splitYAML(transcode(data))
	for i := range chunks {
		chunks[i].source = Source{File: file, Document: i + 1, Line: chunks[i].firstLine}
	}
	return chunks
}

// transcode turns a file that starts with a byte order mark (UTF-8, or
// UTF-16 little- or big-endian) into UTF-8 without the mark, as kubectl
// does before it splits the documents. A file without a mark is UTF-8
// already and stays as it is.
func transcode(data []byte) []byte {
	if !bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) && !bytes.HasPrefix(data, []byte("\xff\xfe")) && !bytes.HasPrefix(data, []byte("\xfe\xff")) {
		return data
	}
	out, _, err := transform.Bytes(unicode.BOMOverride(unicode.UTF8.NewDecoder()), data)
	if err != nil {
		// The decoders replace what they cannot decode instead of failing;
		// should one fail all the same, the YAML parser reports the bytes.
		return data
	}
	return out
}

// decode decodes a document as kubectl does: YAML is converted to JSON
// (sigs.k8s.io/yaml, YAML 1.1 semantics, duplicate keys rejected) and the
// JSON decoded as the API server decodes a request body, keeping integers
// as int64. The value is nil for a null document.
func (c chunk) decode() (rawDocument, ErrorList) {
	jsonData, err := yaml.YAMLToJSONStrict(c.data)
	if err != nil {
		return rawDocument{}, yamlErrors(c.source, c.startLine, err)
	}
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(jsonData, &v); err != nil {
		// YAMLToJSON produced JSON that does not decode; not expected.
		return rawDocument{}, ErrorList{{Source: c.source, Syntax: true, Err: fmt.Errorf("decoding document: %w", err)}}
	}
	return rawDocument{source: c.source, value: v}, nil
}

// chunk is the text of one YAML document of a file.
type chunk struct {
	source Source
	data   []byte
	// startLine is the file line of the chunk's first line; firstLine the
	// file line of its first line with content.
	startLine, firstLine int
}

// splitYAML splits a YAML stream at document separators: lines that are
// "---" alone or followed by white space (and maybe content, which stays in
// the document). The separator line is kept in the document so that line
// numbers and content on it are preserved. Chunks with nothing but blank
// lines, comments and separators are dropped.
func splitYAML(data []byte) []chunk {
	var (
		chunks   []chunk
		cur      = chunk{startLine: 1}
		start    int // byte offset of the current chunk
		offset   int
		line     int
		nonEmpty bool
	)
	flush := func(end int) {
		if nonEmpty {
			cur.data = data[start:end]
			chunks = append(chunks, cur)
		}
	}
	for offset < len(data) {
		line++
		end := bytes.IndexByte(data[offset:], '\n')
		next := len(data)
		if end >= 0 {
			next = offset + end + 1
		}
		text := strings.TrimRight(string(data[offset:next]), "\r\n")
		if isSeparator(text) {
			flush(offset)
			cur = chunk{startLine: line}
			start = offset
			nonEmpty = false
			text = strings.TrimSpace(text[3:])
		}
		if !nonEmpty {
			if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
				nonEmpty = true
				cur.firstLine = line
			}
		}
		offset = next
	}
	flush(len(data))
	return chunks
}

func isSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t'
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): `)

// yamlErrors turns a sigs.k8s.io/yaml error into errors that name the file
// line. Line numbers in the message are relative to the chunk.
func yamlErrors(src Source, startLine int, err error) ErrorList {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	var entries []string
	if rest, ok := strings.CutPrefix(msg, "unmarshal errors:\n"); ok {
		for _, e := range strings.Split(rest, "\n") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	} else {
		entries = []string{msg}
	}
	errs := make(ErrorList, 0, len(entries))
	for _, e := range entries {
		s := src
		if m := yamlLineRE.FindStringSubmatch(e); m != nil {
			if n, convErr := strconv.Atoi(m[1]); convErr == nil {
				s.Line = startLine + n - 1
				e = e[len(m[0]):]
			}
		}
		errs = append(errs, &Error{Source: s, Syntax: true, Err: &syntaxError{msg: e, err: err}})
	}
	return errs
}

// syntaxError is one YAML syntax error, its line number taken out of the
// message (Error reports it as a file line).
type syntaxError struct {
	msg string
	err error
}

func (e *syntaxError) Error() string { return "invalid yaml: " + e.msg }
func (e *syntaxError) Unwrap() error { return e.err }
