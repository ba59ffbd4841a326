package secret

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The helpers here are shared by every small file keyrelay keeps for one
// user: the pre-shared key file, the machine identity (package identity)
// and the peers file (package peers). They read a file without blocking on
// what is not one, check who else may read or write it, and write it
// without ever exposing a half-written file or writing through a link.

// A Kind is a kind of small file keyrelay reads, for ReadFile's errors.
type Kind struct {
	Name   string // what the file is called in errors: "key file"
	Not    error  // wrapped by errors about a path that cannot be one (ErrNotKeyFile)
	MadeBy string // the command that makes a right one: "'keyrelay keygen --out FILE'"
	Max    int64  // the most bytes a right one holds
}

// ErrUnprotected is wrapped by CheckMode's errors: a file that must be its
// owner's alone is open to other users.
var ErrUnprotected = errors.New("unprotected file")

// ReadFile reads a file of kind k and returns its content and permission
// bits.
//
// Only a regular file of at most k.Max bytes is read: a FIFO would block
// start-up until something writes to it, and a device such as /dev/zero
// never ends. The file is opened non-blocking, so that opening a FIFO with
// no writer returns at once, and checked through the opened file (no window
// between the check and the read). A symlink is followed: a link to a
// shared copy is a common set-up.
func (k Kind) ReadFile(path string) ([]byte, fs.FileMode, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("unable to read the %s: %w", k.Name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("unable to read the %s: %w", k.Name, err)
	}
	want := fmt.Sprintf("want a regular file of at most %d bytes, as %s makes", k.Max, k.MadeBy)
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s %s is %s, %w: %s", k.Name, path, describeType(st.Mode()), k.Not, want)
	}
	if st.Size() > k.Max {
		return nil, 0, fmt.Errorf("%s %s is %d bytes, %w: %s", k.Name, path, st.Size(), k.Not, want)
	}
	// The size said is not trusted: the file may grow after the Stat, and
	// some regular files (in /proc) say 0 whatever they hold.
	b, err := io.ReadAll(io.LimitReader(f, k.Max+1))
	if err != nil {
		return nil, 0, fmt.Errorf("unable to read the %s: %w", k.Name, err)
	}
	if int64(len(b)) > k.Max {
		return nil, 0, fmt.Errorf("%s %s holds more than %d bytes, %w: %s", k.Name, path, k.Max, k.Not, want)
	}
	return b, st.Mode().Perm(), nil
}

// unprotectedError is CheckMode's error: its own words, and
// errors.Is(err, ErrUnprotected).
type unprotectedError string

func (e unprotectedError) Error() string        { return string(e) }
func (e unprotectedError) Is(target error) bool { return target == ErrUnprotected }

// WriteNew creates path with mode 0600 (exactly, whatever the umask; on
// Windows an ACL for the user, SYSTEM and Administrators alone) holding
// content. It fails, with an error wrapping fs.ErrExist, on any
// existing name, a symlink included (dangling too): nothing is written
// through a link.
//
// The content goes to a temporary file beside path first, hard-linked to
// path once complete (link(2) is atomic and, like O_EXCL, fails on any
// existing name), so that a reader never sees a half-written file: another
// process that loses a race to create path reads the winner's whole file.
// Where the file system has no hard links the file is created with O_EXCL
// and written in place.
func WriteNew(path string, content []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	tmp, err := writeTemp(path, content, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err := createPrivate(path)
	if err != nil {
		return err
	}
	// Exactly 0600, not what a umask left of it (0400, or nothing).
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("unable to restrict %s: %w", path, err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	return nil
}

// ReplaceFile writes content to a temporary file in path's directory (a
// rename is atomic only within one file system), with mode perm exactly
// (on Windows an ACL for the user, SYSTEM and Administrators alone,
// whatever perm), and renames it over path.
//
// path is replaced, never written through: a symlink at path is replaced by
// the file and its target left as it was (writing through it would
// overwrite whatever it points to), and a reader never sees a half-written
// file.
func ReplaceFile(path string, content []byte, perm fs.FileMode) error {
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	tmp, err := writeTemp(path, content, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("unable to replace %s: %w", path, err)
	}
	return nil
}

// writeTemp writes content to a new file in path's directory (a rename or
// link is atomic only within one file system) with mode perm exactly, on
// disk before it returns its name, so that a crash after the rename or
// link cannot leave path naming an empty file.
func writeTemp(path string, content []byte, perm fs.FileMode) (name string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// Made private (createPrivate): only its owner can open it from the
	// start, before its mode is perm.
	f, err := createTemp(dir, "."+base+".new-")
	if err != nil {
		return "", fmt.Errorf("unable to write beside %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return "", fmt.Errorf("unable to set the mode of %s: %w", f.Name(), err)
	}
	if _, err := f.Write(content); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// createTemp creates a new file in dir named prefix and a random number
// (createPrivate), as os.CreateTemp does, which cannot make it private on
// Windows.
func createTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		f, err := createPrivate(filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)))
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// describeType names, for an error, what a path that is not a regular file
// is.
func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("a special file (%v)", m.Type())
}

// Body is a key or identity file's content without its '#' comment lines
// and blank lines, the rest joined: the base64 text of the key.
func Body(b []byte) string {
	var text strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text.WriteString(line)
	}
	return text.String()
}
