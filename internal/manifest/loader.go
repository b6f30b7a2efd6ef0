package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultNamespace is the namespace of namespaced objects whose manifest
// sets none, as with kubectl and the default context.
const DefaultNamespace = "default"

// File is the name and content of one manifest file.
type File struct {
	// Name identifies the file in errors and sources, usually its path.
	Name string
	// Data is the file's content: YAML documents separated by "---"
	// lines, or JSON.
	Data []byte
}

// Object is a validated object read from a manifest.
type Object struct {
	// Source is where the object was read from.
	Source Source
	// GroupVersionKind is the object's apiVersion and kind.
	GroupVersionKind schema.GroupVersionKind
	// Namespace and Name identify the object. Namespace is empty for
	// cluster-scoped objects.
	Namespace, Name string
	// Content is the object as the API server would store it on create:
	// unknown fields pruned, defaults applied, status dropped when the
	// status subresource is enabled.
	Content map[string]any
}

// Loader reads manifests and validates every object whose kind it has a
// Validator for. Documents of other groups are skipped; a document of a
// Validator's group with a kind no Validator knows is an error (most likely
// a typo). A Loader is safe for concurrent use.
type Loader struct {
	validators map[schema.GroupKind]*Validator
	groups     map[string]bool
}

// NewLoader returns a Loader that validates with the given Validators.
func NewLoader(validators ...*Validator) *Loader {
	l := &Loader{validators: map[schema.GroupKind]*Validator{}, groups: map[string]bool{}}
	for _, v := range validators {
		l.validators[v.GroupKind()] = v
		l.groups[v.GroupKind().Group] = true
	}
	return l
}

// Load reads the manifest files named by paths (see ReadFiles) and returns
// the validated objects in source order. It reports every problem, not
// just the first, as an ErrorList; on error no objects are returned.
func (l *Loader) Load(paths ...string) ([]Object, error) {
	files, err := ReadFiles(paths...)
	if err != nil {
		return nil, err
	}
	return l.Read(files...)
}

// Read is Load for files already in memory.
func (l *Loader) Read(files ...File) ([]Object, error) {
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })

	var chunks []chunk
	for _, f := range files {
		chunks = append(chunks, splitFile(f.Name, f.Data)...)
	}
	docs := make([]rawDocument, len(chunks))
	docErrs := make([]ErrorList, len(chunks))
	parallel(len(chunks), func(i int) { docs[i], docErrs[i] = chunks[i].decode() })

	var (
		errs  ErrorList
		tasks []*task
	)
	for i, d := range docs {
		errs = append(errs, docErrs[i]...)
		if d.value == nil {
			continue
		}
		for _, c := range listItems(d) {
			t, err := l.newTask(c)
			if err != nil {
				errs = append(errs, err)
			}
			if t != nil {
				tasks = append(tasks, t)
			}
		}
	}

	parallel(len(tasks), func(i int) { tasks[i].run() })

	var objs []Object
	for _, t := range tasks {
		for _, fe := range t.errs {
			errs = append(errs, t.error(fe))
		}
		if len(t.errs) == 0 {
			objs = append(objs, Object{
				Source:           t.source,
				GroupVersionKind: t.gvk,
				Namespace:        t.namespace,
				Name:             t.name,
				Content:          t.out,
			})
		}
	}
	errs = append(errs, duplicates(tasks)...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	slices.SortStableFunc(objs, func(a, b Object) int { return compareSources(a.Source, b.Source) })
	return objs, nil
}

// candidate is a document, or an item of a List document.
type candidate struct {
	source Source
	value  any
}

// listItems expands a v1 List (what "kubectl get -o yaml" prints) into its
// items; any other document is returned as is.
func listItems(d rawDocument) []candidate {
	m, ok := d.value.(map[string]any)
	if !ok || m["apiVersion"] != "v1" || m["kind"] != "List" {
		return []candidate{{source: d.source, value: d.value}}
	}
	items, _ := m["items"].([]any)
	out := make([]candidate, 0, len(items))
	for i, item := range items {
		src := d.source
		src.Item = i + 1
		out = append(out, candidate{source: src, value: item})
	}
	return out
}

// task is the validation of one object.
type task struct {
	source          Source
	validator       *Validator
	gvk             schema.GroupVersionKind
	namespace, name string
	in, out         map[string]any
	errs            field.ErrorList
}

// newTask returns the validation task for c, or nil when c is not an
// object of a group the Loader validates.
func (l *Loader) newTask(c candidate) (*task, *Error) {
	m, ok := c.value.(map[string]any)
	if !ok {
		return nil, nil
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	if !l.groups[group] {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Group == "" {
		// "laxity.dev" (the version forgotten) or "laxity.dev/v1/x".
		return nil, &Error{Source: c.source, Err: field.Invalid(field.NewPath("apiVersion"), apiVersion, "must be group/version")}
	}
	v := l.validators[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if v == nil {
		return nil, &Error{Source: c.source, Err: field.NotSupported(field.NewPath("kind"), kind, l.kinds(gv.Group))}
	}
	t := &task{source: c.source, validator: v, gvk: gv.WithKind(kind), in: m}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil && m["metadata"] == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	if meta != nil {
		if v.Namespaced() {
			if ns, ok := meta["namespace"]; !ok || ns == nil || ns == "" {
				meta["namespace"] = DefaultNamespace
			}
			t.namespace, _ = meta["namespace"].(string)
		}
		t.name, _ = meta["name"].(string)
	}
	return t, nil
}

func (l *Loader) kinds(group string) []string {
	var kinds []string
	for gk := range l.validators {
		if gk.Group == group {
			kinds = append(kinds, gk.Kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// error attributes a validation error to the task's object.
func (t *task) error(err error) *Error {
	return &Error{Source: t.source, Kind: t.gvk.Kind, Namespace: t.namespace, Name: t.name, Err: err}
}

// parallel calls f(0) … f(n-1) on GOMAXPROCS goroutines and waits. Each
// call must write only its own results.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

func (t *task) run() {
	t.out, t.errs = t.validator.validate(t.in)
}

// duplicates reports objects defined more than once, naming both sources.
func duplicates(tasks []*task) ErrorList {
	type key struct {
		gk              schema.GroupKind
		namespace, name string
	}
	sorted := slices.Clone(tasks)
	slices.SortStableFunc(sorted, func(a, b *task) int { return compareSources(a.source, b.source) })
	first := map[key]*task{}
	var errs ErrorList
	for _, t := range sorted {
		if t.name == "" {
			continue
		}
		k := key{t.gvk.GroupKind(), t.namespace, t.name}
		if f, ok := first[k]; ok {
			errs = append(errs, t.error(fmt.Errorf("%w: already defined in %s", ErrDuplicate, f.source)))
			continue
		}
		first[k] = t
	}
	return errs
}

// ErrDuplicate is wrapped by the error for an object (kind, namespace and
// name) defined more than once.
var ErrDuplicate = errors.New("duplicate object")

// ReadFiles reads the files named by paths. A path that is a directory is
// walked recursively for files named *.yaml, *.yml or *.json (other files
// are ignored, as are symbolic links to directories); a path that is a file
// is read whatever its name. Files are returned sorted by path, each once.
// Every unreadable path is reported in the returned ErrorList.
func ReadFiles(paths ...string) ([]File, error) {
	var (
		names []string
		errs  ErrorList
	)
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &Error{Source: Source{File: p}, Err: fmt.Errorf("reading manifests: %w", err)})
			continue
		}
		if !info.IsDir() {
			names = append(names, filepath.Clean(p))
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, &Error{Source: Source{File: path}, Err: fmt.Errorf("reading manifests: %w", err)})
				return nil
			}
			if d.IsDir() || !isManifestName(path) {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(path); err != nil || st.IsDir() {
					return nil
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			names = append(names, path)
			return nil
		})
		if err != nil {
			errs = append(errs, &Error{Source: Source{File: p}, Err: fmt.Errorf("reading manifests: %w", err)})
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	files := make([]File, 0, len(names))
	for _, name := range names {
		data, err := readFile(name)
		if err != nil {
			errs = append(errs, &Error{Source: Source{File: name}, Err: fmt.Errorf("reading manifests: %w", err)})
			continue
		}
		files = append(files, File{Name: name, Data: data})
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return files, nil
}

// MaxFileSize is the most laxity reads from one manifest file: far more
// than any set of manifests needs, and little enough that a path such as
// /dev/zero or an endless pipe cannot exhaust the memory.
const MaxFileSize = 16 << 20

// ErrTooLarge is wrapped by the error for a file larger than MaxFileSize.
var ErrTooLarge = errors.New("file too large")

// readFile reads the file name, at most MaxFileSize bytes of it.
func readFile(name string) ([]byte, error) {
	if st, err := os.Stat(name); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		return readPipe(name, pipeWait)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only
	return readLimited(f, MaxFileSize)
}

// pipeWait is how long reading a named pipe waits for a process to open it
// for writing.
var pipeWait = 10 * time.Second

// readPipe reads the named pipe name, at most MaxFileSize bytes of it.
// Opening a pipe waits for a writer; if none comes within wait, readPipe
// opens the pipe for writing itself, which ends the wait, and reports that
// nothing was written.
func readPipe(name string, wait time.Duration) ([]byte, error) {
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		done <- opened{f, err}
	}()
	timedOut := false
	var o opened
	select {
	case o = <-done:
	case <-time.After(wait):
		timedOut = true
		// The reader's open is waiting, so a non-blocking open for
		// writing succeeds and lets it return.
		if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
		o = <-done
	}
	if o.err != nil {
		return nil, o.err
	}
	defer o.f.Close() // read only
	data, err := readLimited(o.f, MaxFileSize)
	if err == nil && timedOut && len(data) == 0 {
		return nil, fmt.Errorf("named pipe: no process opened it for writing within %s", wait)
	}
	return data, err
}

// readLimited reads r to its end, failing with ErrTooLarge once it holds
// more than limit bytes; it never reads more than limit+1 bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %s, the most laxity reads from one manifest file", ErrTooLarge, sizeString(limit))
	}
	return data, nil
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func isManifestName(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
