// Package secret makes, stores and loads keyrelay's pre-shared key: 32
// random bytes, kept base64-encoded in a file only its owner can read, and
// named to people by a short fingerprint they can compare across machines.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Len is the key length: 256 bits.
const Len = 32

// Env names the environment variable that can give the key file.
const Env = "KEYRELAY_KEY_FILE"

// ErrNoKey is wrapped by errors about a missing key.
var ErrNoKey = errors.New("no key")

// Generate returns a new random key.
func Generate() ([]byte, error) {
	k := make([]byte, Len)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("unable to make a key: %w", err)
	}
	return k, nil
}

// Fingerprint is a short, non-secret name of key for people to compare:
// the first 8 bytes of SHA-256 over a label and the key, as four groups.
func Fingerprint(key []byte) string {
	h := sha256.Sum256(append([]byte("keyrelay key fingerprint v1\x00"), key...))
	return fmt.Sprintf("%x-%x-%x-%x", h[0:2], h[2:4], h[4:6], h[6:8])
}

// Encode is the key file's content: a comment line, then the key in base64.
func Encode(key []byte) []byte {
	return []byte(fmt.Sprintf("# keyrelay pre-shared key, fingerprint %s. Keep it secret; copy it\n# to the other machine over a channel you trust (scp, a USB stick).\n%s\n",
		Fingerprint(key), base64.StdEncoding.EncodeToString(key)))
}

// Write stores key at path with mode 0600. It refuses to replace an
// existing file (or symlink, dangling too) unless force is set.
//
// With force the key goes to a new file beside path, renamed over it:
// path is replaced, never written through. A symlink at path is replaced
// by the key file and its target left as it was (writing through it would
// overwrite whatever it points to), a reader never sees a half-written
// key, and the new file has mode 0600 whatever the old one had.
func Write(path string, key []byte, force bool) error {
	if force {
		return replace(path, Encode(key))
	}
	// O_EXCL fails on any existing name, a symlink included (it is not
	// followed), so nothing is written through a link.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		what := ""
		if target, err := os.Readlink(path); err == nil {
			what = fmt.Sprintf(" (a symbolic link to %s)", target)
		}
		return fmt.Errorf("%s exists%s: not replaced (use --force to replace it; both machines then need the new key)", path, what)
	}
	if err != nil {
		return fmt.Errorf("unable to write the key: %w", err)
	}
	// Exactly 0600, not what a umask left of it (0400, or nothing).
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("unable to restrict the key file: %w", err)
	}
	if _, err := f.Write(Encode(key)); err != nil {
		f.Close()
		return fmt.Errorf("unable to write the key: %w", err)
	}
	return f.Close()
}

// replace writes content to a temporary file in path's directory (a
// rename is atomic only within one file system) and renames it over path.
func replace(path string, content []byte) (err error) {
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give the key file's name (--out DIR/keyrelay.key)", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// CreateTemp makes the file with mode 0600, only its owner can read
	// it from the start.
	f, err := os.CreateTemp(dir, "."+base+".new-*")
	if err != nil {
		return fmt.Errorf("unable to write the key beside %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// Exactly 0600, as Write without force.
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("unable to restrict the key file: %w", err)
	}
	if _, err := f.Write(content); err != nil {
		return fmt.Errorf("unable to write the key: %w", err)
	}
	// On disk before the rename, so that a crash cannot leave path naming
	// an empty file in place of the old key.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("unable to write the key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("unable to write the key: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("unable to replace %s: %w", path, err)
	}
	return nil
}

// MaxFileSize bounds what Load reads. A key file from Write is about 200
// bytes (two comment lines and 44 of base64); 4 KiB leaves room for comments
// added by hand and still refuses, before reading it, a file that is not a
// key file (a log, a disk image named by mistake).
const MaxFileSize = 4096

// ErrNotKeyFile is wrapped by Load's errors about a path that cannot hold a
// key: not a regular file, or larger than MaxFileSize.
var ErrNotKeyFile = errors.New("not a key file")

// Load reads a key file. warning is set when the file is readable by other
// users (the key still loads: the user decides).
//
// Only a regular file of at most MaxFileSize bytes is read: a FIFO would
// block start-up until something writes to it, and a device such as
// /dev/zero never ends. The file is opened non-blocking, so that opening a
// FIFO with no writer returns at once, and checked through the opened file
// (no window between the check and the read).
func Load(path string) (key []byte, warning string, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", fmt.Errorf("unable to read the key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("unable to read the key file: %w", err)
	}
	want := fmt.Sprintf("want a regular file of at most %d bytes, as 'keyrelay keygen --out FILE' makes", MaxFileSize)
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("key file %s is %s, %w: %s", path, describeType(st.Mode()), ErrNotKeyFile, want)
	}
	if st.Size() > MaxFileSize {
		return nil, "", fmt.Errorf("key file %s is %d bytes, %w: %s", path, st.Size(), ErrNotKeyFile, want)
	}
	// The size said is not trusted: the file may grow after the Stat, and
	// some regular files (in /proc) say 0 whatever they hold.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, "", fmt.Errorf("unable to read the key file: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, "", fmt.Errorf("key file %s holds more than %d bytes, %w: %s", path, MaxFileSize, ErrNotKeyFile, want)
	}
	key, err = Decode(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		warning = fmt.Sprintf("key file %s has mode %#o: other users can read it (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	return key, warning, nil
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

// Decode parses a key file's content: '#' comment lines, then the base64
// key.
func Decode(b []byte) ([]byte, error) {
	var text strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text.WriteString(line)
	}
	key, err := base64.StdEncoding.DecodeString(text.String())
	if err != nil {
		return nil, fmt.Errorf("not a keyrelay key file (base64: %v); make one with 'keyrelay keygen --out FILE'", err)
	}
	if len(key) != Len {
		return nil, fmt.Errorf("key is %d bytes, want %d; make one with 'keyrelay keygen --out FILE'", len(key), Len)
	}
	return key, nil
}
