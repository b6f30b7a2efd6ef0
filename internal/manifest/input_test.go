package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"
)

// utf16File encodes s as UTF-16 with a byte order mark, as Windows editors
// and PowerShell's redirection write it.
func utf16File(s string, order binary.ByteOrder) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, order, uint16(0xfeff))
	for _, u := range utf16.Encode([]rune(s)) {
		_ = binary.Write(&b, order, u)
	}
	return b.Bytes()
}

// fourPools is a file of four NodePools, one document each.
func fourPools() string {
	return nodePool("p1") + "---\n" + nodePool("p2") + "---\n" + nodePool("p3") + "\n---\n" + nodePool("p4")
}

func TestReadTranscodes(t *testing.T) {
	l := NewLoader(mustNodePoolValidator(t))
	plain := fourPools()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"UTF-8", []byte(plain)},
		{"UTF-8 with BOM", append([]byte("\xef\xbb\xbf"), plain...)},
		{"UTF-16LE with BOM", utf16File(plain, binary.LittleEndian)},
		{"UTF-16BE with BOM", utf16File(plain, binary.BigEndian)},
		{"UTF-16LE with BOM, CRLF", utf16File(strings.ReplaceAll(plain, "\n", "\r\n"), binary.LittleEndian)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := l.Read(File{Name: "pools.yaml", Data: tc.data})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var names []string
			for _, o := range objs {
				names = append(names, o.Source.String()+" "+o.Name)
			}
			want := []string{"pools.yaml: document 1 p1", "pools.yaml: document 2 p2", "pools.yaml: document 3 p3", "pools.yaml: document 4 p4"}
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Errorf("Read: got %q, want %q", names, want)
			}
		})
	}
}

func TestReadFilesSizeCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(dir, "exact.yaml")
	if err := os.WriteFile(exact, append([]byte(nodePool("p1")), bytes.Repeat([]byte("#"), MaxFileSize-len(nodePool("p1")))...), 0o644); err != nil {
		t.Fatal(err)
	}
	if files, err := ReadFiles(exact); err != nil || len(files[0].Data) != MaxFileSize {
		t.Fatalf("ReadFiles of a file of exactly MaxFileSize: %v", err)
	}
	paths := map[string]string{"a file one byte too large": big}
	if runtime.GOOS == "linux" {
		paths["/dev/zero"] = "/dev/zero"
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			_, err := ReadFiles(path)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ReadFiles(%s): got %v, want ErrTooLarge", path, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, "16 MiB") {
				t.Errorf("error %q names neither the file nor the limit", msg)
			}
		})
	}
	t.Run("a directory holding a large file", func(t *testing.T) {
		_, err := ReadFiles(dir)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) {
			t.Fatalf("ReadFiles(dir): got %v, want ErrTooLarge for %s", err, big)
		}
	})
}
