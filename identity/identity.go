// Package identity holds machine identities: X25519 static key pairs, one
// per machine, kept in a file only its owner can read and named to people by
// the public key's base64 text and a short fingerprint. Protocol 5's
// handshake (Noise IKpsk2, PROTOCOL.md §8.2) authenticates machines by them,
// and one-way packets by their XEdDSA signatures (xeddsa.go, §8.6).
package identity

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/keyrelay/keyrelay/secret"
)

// KeyLen is the length of an X25519 key, private or public.
const KeyLen = 32

// Env names the environment variable that can give the identity file.
const Env = "KEYRELAY_IDENTITY"

// FileName is the identity file's name in keyrelay's config directory.
const FileName = "identity"

// MaxFileSize bounds what Load reads: a file from Write is about 200 bytes;
// 4 KiB leaves room for comments added by hand, as for key files.
const MaxFileSize = 4096

// ErrNotIdentityFile is wrapped by Load's errors about a path that cannot
// hold an identity: not a regular file, or larger than MaxFileSize.
var ErrNotIdentityFile = errors.New("not an identity file")

var file = secret.Kind{Name: "identity file", Not: ErrNotIdentityFile, MadeBy: "'keyrelay id'", Max: MaxFileSize}

// An Identity is a machine's static key pair. It is immutable, safe for
// concurrent use.
type Identity struct {
	priv    *ecdh.PrivateKey
	pub     [KeyLen]byte
	signing signingKey // the same key, to sign with (xeddsa.go)
}

// Generate returns a new identity from the system's secure random source
// (since Go 1.26 crypto/ecdh draws from it whatever reader it is given;
// crypto/rand.Reader is that source for GODEBUG=cryptocustomrand=1 too).
func Generate() (*Identity, error) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("unable to make an identity: %w", err)
	}
	return fromKey(priv), nil
}

// FromPrivate returns the identity of a private key (32 bytes, any value:
// X25519 clamps it).
func FromPrivate(private []byte) (*Identity, error) {
	priv, err := ecdh.X25519().NewPrivateKey(private)
	if err != nil {
		return nil, fmt.Errorf("private key is %d bytes, want %d", len(private), KeyLen)
	}
	return fromKey(priv), nil
}

func fromKey(priv *ecdh.PrivateKey) *Identity {
	id := &Identity{priv: priv, signing: calculateKeyPair(priv.Bytes())}
	copy(id.pub[:], priv.PublicKey().Bytes())
	return id
}

// Private is the private key, for the handshake's DH operations.
func (id *Identity) Private() *ecdh.PrivateKey { return id.priv }

// Public is the public key: what peers know this machine by.
func (id *Identity) Public() [KeyLen]byte { return id.pub }

// DH is the X25519 shared secret of this identity and the public key
// peer; an error for a low-order peer key (an all-zero result).
func (id *Identity) DH(peer [KeyLen]byte) ([KeyLen]byte, error) {
	pub, err := ecdh.X25519().NewPublicKey(peer[:])
	if err != nil {
		return [KeyLen]byte{}, err
	}
	s, err := id.priv.ECDH(pub)
	if err != nil {
		return [KeyLen]byte{}, err
	}
	return [KeyLen]byte(s), nil
}

// String is the public key's text form and fingerprint, never the private
// key: an identity printed by mistake gives nothing away.
func (id *Identity) String() string {
	return FormatPublic(id.pub) + " " + Fingerprint(id.pub)
}

// FormatPublic is a public key's text form: standard base64 of its 32
// bytes, 44 characters, as WireGuard writes its keys.
func FormatPublic(pub [KeyLen]byte) string {
	return base64.StdEncoding.EncodeToString(pub[:])
}

// keyShape says what a public key looks like, for ParsePublic's errors.
const keyShape = "a public key is 44 characters of base64 ending in '=', as 'keyrelay id' prints on the other machine"

// lowOrderProbe is any fixed private key: X25519 clamps every scalar to a
// multiple of 8, so its product with a point of order 1, 2, 4 or 8 is the
// identity, which crypto/ecdh reports as an error (RFC 7748 section 6.1's
// all-zero check). The probe's value does not matter, only that it is fixed.
var lowOrderProbe = func() *ecdh.PrivateKey {
	k, err := ecdh.X25519().NewPrivateKey([]byte("keyrelay low-order point probe!!"))
	if err != nil {
		panic(err) // a programming error: the literal is 32 bytes
	}
	return k
}()

// ParsePublic parses a public key's text form (FormatPublic). It refuses
// text of the wrong length or encoding, and a low-order point (the all-zero
// key and the other small-order X25519 points): a DH with one yields all
// zeros whatever the other key, so a peer with such a key would share a
// known secret with everyone.
func ParsePublic(s string) ([KeyLen]byte, error) {
	var pub [KeyLen]byte
	if len(s) != base64.StdEncoding.EncodedLen(KeyLen) {
		return pub, fmt.Errorf("%q is %d characters, not a key: %s", clip(s), len(s), keyShape)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != KeyLen {
		return pub, fmt.Errorf("%q is not base64, not a key: %s", clip(s), keyShape)
	}
	copy(pub[:], b)
	if err := CheckPublic(pub); err != nil {
		return [KeyLen]byte{}, fmt.Errorf("%q: %w", s, err)
	}
	return pub, nil
}

// CheckPublic refuses a public key that is a low-order point (see
// lowOrderProbe): what ParsePublic checks of a key given as bytes.
func CheckPublic(pub [KeyLen]byte) error {
	p, err := ecdh.X25519().NewPublicKey(pub[:])
	if err == nil {
		_, err = lowOrderProbe.ECDH(p)
	}
	if err != nil {
		return errors.New("a low-order point, not a machine's key (every DH with it is all zeros): copy the key 'keyrelay id' prints on the other machine")
	}
	return nil
}

// clip shortens what a user gave for an error message: a key pasted with
// the rest of a file should not fill the terminal.
func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// Fingerprint is a short name of a public key for people to compare: the
// first 8 bytes of SHA-256 over a label and the key, as four groups (as
// secret.Fingerprint, under another label, so that a key and an identity
// never share a fingerprint).
func Fingerprint(pub [KeyLen]byte) string {
	h := sha256.Sum256(append([]byte("keyrelay identity fingerprint v1\x00"), pub[:]...))
	return fmt.Sprintf("%x-%x-%x-%x", h[0:2], h[2:4], h[4:6], h[6:8])
}

// Encode is the identity file's content: a comment line naming the public
// key and fingerprint, then the private key in base64.
func Encode(id *Identity) []byte {
	return []byte(fmt.Sprintf("# keyrelay machine identity: public key %s, fingerprint %s.\n# The line below is its private key: keep it secret, never copy it to another machine.\n%s\n",
		FormatPublic(id.pub), Fingerprint(id.pub), base64.StdEncoding.EncodeToString(id.priv.Bytes())))
}

// Decode parses an identity file's content: '#' comment lines, then the
// base64 private key.
func Decode(b []byte) (*Identity, error) {
	k, err := base64.StdEncoding.DecodeString(secret.Body(b))
	if err != nil {
		return nil, fmt.Errorf("not a keyrelay identity file (base64: %v); move it away and run 'keyrelay id' to make a new one", err)
	}
	if len(k) != KeyLen {
		return nil, fmt.Errorf("private key is %d bytes, want %d: not a keyrelay identity file; move it away and run 'keyrelay id' to make a new one", len(k), KeyLen)
	}
	return FromPrivate(k)
}

// Write stores id at path with mode 0600 (on Windows an ACL for the user,
// SYSTEM and Administrators alone: secret.WriteNew). Without replace it
// refuses an existing file (or symlink, dangling too): nothing is written
// through a link. With replace the file is written beside path and
// renamed over it, so that a reader never sees half an identity.
func Write(path string, id *Identity, replace bool) error {
	if replace {
		if err := secret.ReplaceFile(path, Encode(id), 0o600); err != nil {
			return fmt.Errorf("unable to write the identity: %w", err)
		}
		return nil
	}
	err := secret.WriteNew(path, Encode(id))
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: not replaced (this machine's peers know it by the identity there): %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("unable to write the identity: %w", err)
	}
	return nil
}

// Load reads an identity file. It refuses a file other users can read or
// write, as ssh refuses an unprotected private key: whoever reads it can
// pass for this machine, whoever writes it can make it another; and one
// others could replace through a directory above it (secret.CheckPlace).
func Load(path string) (*Identity, error) {
	b, perm, err := file.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := secret.CheckMode(file.Name, path, perm, 0o077); err != nil {
		return nil, fmt.Errorf("%w; an identity others can read or change is refused", err)
	}
	if err := secret.CheckPlace(file.Name, path); err != nil {
		return nil, fmt.Errorf("%w; an identity others can replace is refused", err)
	}
	id, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// LoadOrCreate loads the identity at path, or makes one there if there is
// none (created reports which), with its directory (secret.MkdirPrivate)
// if needed. Two processes that make it at once end with the same identity: the one
// that loses the race to create the file loads the winner's.
func LoadOrCreate(path string) (id *Identity, created bool, err error) {
	id, err = Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, false, err
	}
	if err := secret.CheckPlace(file.Name, path); err != nil {
		return nil, false, fmt.Errorf("%w; an identity is not made where others can replace it", err)
	}
	if err := secret.MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, false, fmt.Errorf("unable to make the identity's directory: %w", err)
	}
	id, err = Generate()
	if err != nil {
		return nil, false, err
	}
	err = secret.WriteNew(path, Encode(id))
	if errors.Is(err, fs.ErrExist) {
		id, err = Load(path)
		if target, lerr := os.Readlink(path); errors.Is(err, fs.ErrNotExist) && lerr == nil {
			// Not followed to create its target: a link is the user's set-up.
			return nil, false, fmt.Errorf("identity file %s is a symbolic link to %s, which does not exist: make it there ('keyrelay id --identity %s') or remove the link", path, target, target)
		}
		return id, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("unable to write the identity: %w", err)
	}
	return id, true, nil
}
