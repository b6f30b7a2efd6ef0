//go:build unix

package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withTimeout fails the test if f does not return within a minute: the
// reads under test must neither hang nor wait for a writer.
func withTimeout(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the read hangs")
	}
}

func TestReadFilesFIFO(t *testing.T) {
	dir := t.TempDir()
	t.Run("nobody writes", func(t *testing.T) {
		fifo := filepath.Join(dir, "idle")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		defer func(w time.Duration) { pipeWait = w }(pipeWait)
		pipeWait = 100 * time.Millisecond
		withTimeout(t, func() {
			_, err := ReadFiles(fifo)
			if err == nil || !strings.HasPrefix(err.Error(), fifo+": ") || !strings.Contains(err.Error(), "no process opened it for writing") {
				t.Errorf("ReadFiles(idle FIFO): got %v, want an error naming the pipe", err)
			}
		})
	})
	t.Run("a late writer", func(t *testing.T) {
		fifo := filepath.Join(dir, "late")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		go func() {
			// Whether it comes before or after the reader, a writer
			// within pipeWait is read.
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer w.Close()
			_, _ = w.Write([]byte(fourPools()))
		}()
		withTimeout(t, func() {
			objs, err := NewLoader(mustNodePoolValidator(t)).Load(fifo)
			if err != nil || len(objs) != 4 {
				t.Errorf("Load(FIFO): got %d objects, %v; want 4", len(objs), err)
			}
		})
	})
	t.Run("an endless writer", func(t *testing.T) {
		fifo := filepath.Join(dir, "endless")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer w.Close()
			chunk := bytes.Repeat([]byte("# endless\n"), 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}()
		withTimeout(t, func() {
			if _, err := ReadFiles(fifo); !errors.Is(err, ErrTooLarge) {
				t.Errorf("ReadFiles(endless FIFO): got %v, want ErrTooLarge", err)
			}
		})
	})
	t.Run("a pipe with manifests, as -f <(command) gives", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("/dev/fd names a pipe on Linux")
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		go func() {
			defer w.Close()
			_, _ = w.Write(utf16File(fourPools(), binary.LittleEndian))
		}()
		withTimeout(t, func() {
			objs, err := NewLoader(mustNodePoolValidator(t)).Load(fmt.Sprintf("/dev/fd/%d", r.Fd()))
			if err != nil || len(objs) != 4 {
				t.Errorf("Load(pipe): got %d objects, %v; want 4", len(objs), err)
			}
		})
	})
}
