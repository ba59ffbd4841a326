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
	"io/fs"
	"os"
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
// With force the key goes to a new file beside path, renamed over it
// (ReplaceFile): path is replaced, never written through, and the new file
// has mode 0600 whatever the old one had.
func Write(path string, key []byte, force bool) error {
	if force {
		if st, err := os.Lstat(path); err == nil && st.IsDir() {
			return fmt.Errorf("%s is a directory: give the key file's name (--out DIR/keyrelay.key)", path)
		}
		if err := ReplaceFile(path, Encode(key), 0o600); err != nil {
			return fmt.Errorf("unable to write the key: %w", err)
		}
		return nil
	}
	err := WriteNew(path, Encode(key))
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

// keyFile is the pre-shared key file, for ReadFile.
var keyFile = Kind{Name: "key file", Not: ErrNotKeyFile, MadeBy: "'keyrelay keygen --out FILE'", Max: MaxFileSize}

// Load reads a key file (ReadFile: only a regular file of at most
// MaxFileSize bytes). It refuses one that other users may read or change
// (CheckMode, the error wrapping ErrUnprotected and naming the chmod that
// fixes it), or replace through a directory above it (CheckPlace): the
// key is a secret, and whoever holds it can be one of the paired ends.
func Load(path string) (key []byte, err error) {
	b, perm, err := keyFile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err = Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Read and write bits only: a group execute bit (0610) gives nothing.
	if err := CheckMode(keyFile.Name, path, perm, 0o066); err != nil {
		return nil, err
	}
	if err := CheckPlace(keyFile.Name, path); err != nil {
		return nil, err
	}
	return key, nil
}

// Decode parses a key file's content: '#' comment lines, then the base64
// key.
func Decode(b []byte) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(Body(b))
	if err != nil {
		return nil, fmt.Errorf("not a keyrelay key file (base64: %v); make one with 'keyrelay keygen --out FILE'", err)
	}
	if len(key) != Len {
		return nil, fmt.Errorf("key is %d bytes, want %d; make one with 'keyrelay keygen --out FILE'", len(key), Len)
	}
	return key, nil
}
