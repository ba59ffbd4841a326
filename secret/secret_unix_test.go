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

// TestLoadRefusesWhatIsNotAKeyFile (PROTOCOL.md §8.1): only a regular file
// of at most MaxFileSize bytes is read. A FIFO fails at once instead of
// blocking start-up until something writes to it; a device (/dev/zero) or an
// oversized file fails without being read; a directory fails. Each error
// names the file, what it is, and what is wanted.
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
			go func() { _, err := Load(tt.path); done <- err }()
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
	_, err = Load(path)
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
	got, err := Load(filepath.Join(dir, "link"))
	if err != nil || string(got) != string(key) {
		t.Errorf("Load through a symlink = %x, %v", got, err)
	}
}

// TestForceReplacesSymlink (PROTOCOL.md §8.1): Write with force replaces a
// symlink at path by the key file, mode 0600, and leaves the link's target
// as it was (writing through the link would overwrite it); a dangling link
// is replaced without creating its target. No temporary file is left beside
// it.
func TestForceReplacesSymlink(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		name := "to a file"
		if dangling {
			name = "dangling"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
			if !dangling {
				if err := os.WriteFile(target, []byte("precious\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("target", link); err != nil {
				t.Fatal(err)
			}
			key, _ := Generate()
			if err := Write(link, key, true); err != nil {
				t.Fatal(err)
			}
			st, err := os.Lstat(link)
			if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("after --force %s is %v (%v), want a regular file with mode 0600", link, st.Mode(), err)
			}
			if got, err := Load(link); err != nil || string(got) != string(key) {
				t.Errorf("Load(%s) = %x, %v, want the new key", link, got, err)
			}
			b, err := os.ReadFile(target)
			switch {
			case dangling && !errors.Is(err, os.ErrNotExist):
				t.Errorf("the dangling link's target was created: %q, %v", b, err)
			case !dangling && string(b) != "precious\n":
				t.Errorf("the link's target now holds %q (%v), want it untouched", b, err)
			}
			if !dangling {
				if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
					t.Errorf("the link's target has mode %#o, want its own 0644", st.Mode().Perm())
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "target" && e.Name() != "link" {
					t.Errorf("left behind in %s: %s", dir, e.Name())
				}
			}
		})
	}
}

// TestWriteRefusesExisting: without force nothing that exists at path is
// replaced or written through: a file, a symlink, a dangling symlink (its
// target is not created). The error says so and names --force.
func TestWriteRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	file, link, dangling := filepath.Join(dir, "file"), filepath.Join(dir, "link"), filepath.Join(dir, "dangling")
	if err := os.WriteFile(file, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", dangling); err != nil {
		t.Fatal(err)
	}
	key, _ := Generate()
	for path, want := range map[string]string{
		file:     file + " exists: not replaced (use --force to replace it; both machines then need the new key)",
		link:     link + " exists (a symbolic link to file): not replaced (use --force to replace it; both machines then need the new key)",
		dangling: dangling + " exists (a symbolic link to nowhere): not replaced (use --force to replace it; both machines then need the new key)",
	} {
		if err := Write(path, key, false); err == nil || err.Error() != want {
			t.Errorf("Write(%s) = %v\nwant %s", path, err, want)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "old\n" {
		t.Errorf("the file now holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
}

// TestForceOnDirectory: --force naming a directory fails clearly and
// leaves nothing behind.
func TestForceOnDirectory(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	key, _ := Generate()
	want := sub + " is a directory: give the key file's name (--out DIR/keyrelay.key)"
	if err := Write(sub, key, true); err == nil || err.Error() != want {
		t.Errorf("Write(%s, force) = %v\nwant %s", sub, err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind in %s: %v", dir, entries)
	}
}

// TestWriteNewLeavesOnlyTheFile: the temporary file WriteNew writes first
// is gone once path holds the content, with mode 0600, and a second
// WriteNew fails with fs.ErrExist leaving the first content.
func TestWriteNewLeavesOnlyTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteNew(path, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(path, []byte("two\n")); !errors.Is(err, os.ErrExist) {
		t.Errorf("second WriteNew = %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\n" {
		t.Errorf("%s holds %q, want the first content", path, b)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", path, st, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind in %s: %v", dir, entries)
	}
}
