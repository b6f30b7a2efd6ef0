package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/laxity-dev/laxity/internal/manifest"
)

// stdinPath is the -f value that reads standard input, as with kubectl.
const stdinPath = "-"

// stdinName names standard input in errors and sources.
const stdinName = "<stdin>"

// readManifests reads the manifest files and directories of paths, and
// standard input for "-" (once, however often it is named).
func readManifests(paths []string, stdin io.Reader) ([]manifest.File, error) {
	files := slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p == stdinPath })
	var read []manifest.File
	if len(files) > 0 {
		var err error
		if read, err = manifest.ReadFiles(files...); err != nil {
			return nil, err
		}
	}
	if len(files) == len(paths) {
		return read, nil
	}
	if stdin == nil {
		return nil, errors.New(stdinName + ": reading manifests: no standard input")
	}
	// As with a file, at most manifest.MaxFileSize bytes, so that an endless
	// pipe cannot exhaust the memory.
	data, err := io.ReadAll(io.LimitReader(stdin, manifest.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading manifests: %w", stdinName, err)
	}
	if len(data) > manifest.MaxFileSize {
		return nil, fmt.Errorf("%s: reading manifests: %w: more than %d MiB, the most laxity reads from one manifest file", stdinName, manifest.ErrTooLarge, manifest.MaxFileSize>>20)
	}
	return append(read, manifest.File{Name: stdinName, Data: data}), nil
}
