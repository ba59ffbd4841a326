//go:build unix

package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesWhatIsNotAKeyFile (issue 15 must-have 5): only a regular
// file of at most MaxFileSize bytes is read. A FIFO fails at once instead
// of blocking start-up until something writes to it; a device (/dev/zero)
// or an oversized file fails without being read; a directory fails. Each
// error names the file, what it is, and what is wanted.
func TestLoadRefusesWhatIsNotAKeyFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A sparse 1 GiB file: reading it whole would take seconds and 1 GiB
	// of memory, refusing it by its size takes neither.
	big := filepath.Join(dir, "big")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// One byte over the bound: the bound is MaxFileSize, not roughly it.
	over := filepath.Join(dir, "over")
	if err := os.WriteFile(over, []byte(strings.Repeat("#", MaxFileSize+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, is string
	}{
		{"fifo", fifo, "is a named pipe (FIFO)"},
		{"dev zero", "/dev/zero", "is a character device"},
		{"directory", dir, "is a directory"},
		{"1 GiB file", big, "is 1073741824 bytes"},
		{"one byte over", over, "is 4097 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skip(err)
			}
			// Bounded, so that a regression (a blocking open of the FIFO)
			// fails instead of hanging the test binary.
			done := make(chan error, 1)
			go func() { _, _, err := Load(tt.path); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Load(%s) still blocked after 5s", tt.path)
			}
			want := "key file " + tt.path + " " + tt.is + ", not a key file: want a regular file of at most 4096 bytes, as 'keyrelay keygen --out FILE' makes"
			if err == nil || err.Error() != want {
				t.Errorf("Load(%s) = %v\nwant %s", tt.path, err, want)
			}
			if !errors.Is(err, ErrNotKeyFile) {
				t.Errorf("Load(%s) error does not wrap ErrNotKeyFile: %v", tt.path, err)
			}
		})
	}
}

// TestLoadBoundsWhatItReads: a regular file that says it is small but holds
// more (as /proc files say 0 bytes) is read no further than MaxFileSize+1
// bytes and refused.
func TestLoadBoundsWhatItReads(t *testing.T) {
	const path = "/proc/self/smaps"
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		t.Skipf("needs %s as a regular file that says 0 bytes: %v %v", path, st, err)
	}
	// A test binary has dozens of mappings of about 1 KiB of smaps each.
	_, _, err = Load(path)
	want := "key file " + path + " holds more than 4096 bytes, not a key file: want a regular file of at most 4096 bytes"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrNotKeyFile) {
		t.Errorf("Load(%s) = %v\nwant %s...", path, err, want)
	}
}

// TestLoadThroughSymlink: a symlink to a key file is a key file (a common
// set-up: ~/.config/keyrelay/key pointing at a shared copy).
func TestLoadThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	key, _ := Generate()
	if err := Write(filepath.Join(dir, "real"), key, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(filepath.Join(dir, "link"))
	if err != nil || string(got) != string(key) {
		t.Errorf("Load through a symlink = %x, %v", got, err)
	}
}
