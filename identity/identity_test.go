package identity

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/secret"
)

// rfc7748Alice is RFC 7748 section 6.1's Alice: her private key, and the
// public key X25519 gives for it.
const (
	rfc7748AlicePrivate = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
	rfc7748AlicePublic  = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
)

func alice(t testing.TB) *Identity {
	t.Helper()
	priv, _ := hex.DecodeString(rfc7748AlicePrivate)
	id, err := FromPrivate(priv)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPublicAndFingerprintVector: the public key of RFC 7748's Alice is
// hers, in base64, and its fingerprint is SHA-256("keyrelay identity
// fingerprint v1\x00" || pub)'s first 8 bytes (computed apart from this
// code, with Python's hashlib).
func TestPublicAndFingerprintVector(t *testing.T) {
	id := alice(t)
	if got := FormatPublic(id.Public()); got != rfc7748AlicePublic {
		t.Errorf("public key %s, want %s", got, rfc7748AlicePublic)
	}
	if got := Fingerprint(id.Public()); got != "d52a-a19d-2bfb-acfb" {
		t.Errorf("fingerprint %s, want d52a-a19d-2bfb-acfb", got)
	}
	if got := id.String(); got != rfc7748AlicePublic+" d52a-a19d-2bfb-acfb" {
		t.Errorf("String() = %q: want the public key and fingerprint only", got)
	}
	// Under another label than the pre-shared key's: the same 32 bytes
	// never have the same fingerprint as a key and as an identity.
	pub := id.Public()
	if Fingerprint(pub) == secret.Fingerprint(pub[:]) {
		t.Error("an identity's fingerprint equals the key fingerprint of the same bytes")
	}
}

// lowOrder are the X25519 points of order 1, 2, 4 and 8 in their 32-byte
// encodings, canonical and not (p, p+1, the top bit set), as libsodium's
// blocklist has them.
var lowOrder = []string{
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", // 0
	"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", // 1
	"4Ot6fDtBuK4WVuP68Z/EatoJjeucMrH9hmIFFl9JuAA=", // order 8
	"X5yVvKNQjCSx0LFVnIPvWwREXMRYHI6G2CJO3dCfEVc=", // order 8
	"7P///////////////////////////////////////38=", // p-1, order 2
	"7f///////////////////////////////////////38=", // p, that is 0
	"7v///////////////////////////////////////38=", // p+1, that is 1
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA=", // 0 with the top bit
	"4Ot6fDtBuK4WVuP68Z/EatoJjeucMrH9hmIFFl9JuIA=", // order 8 with the top bit
}

// TestParsePublic: a key's text form parses back to it; text of another
// length or not base64 (or base64 with stray bits) is refused saying what a
// key looks like; a low-order point is refused as one.
func TestParsePublic(t *testing.T) {
	if pub, err := ParsePublic(rfc7748AlicePublic); err != nil || pub != alice(t).Public() {
		t.Errorf("ParsePublic(Alice) = %x, %v", pub, err)
	}
	for _, tt := range []struct{ name, in, want string }{
		{"empty", "", `"" is 0 characters, not a key: a public key is 44 characters of base64`},
		{"short", rfc7748AlicePublic[:43], "is 43 characters, not a key"},
		{"long", rfc7748AlicePublic + "=", "is 45 characters, not a key"},
		{"spaces", " " + rfc7748AlicePublic[:43], "is not base64, not a key"},
		{"url alphabet", strings.ReplaceAll(rfc7748AlicePublic, "/", "_"), "is not base64"},
		{"stray bits", rfc7748AlicePublic[:42] + "p=", "is not base64"},
		{"no padding", rfc7748AlicePublic[:43] + "A", "is not base64"},
		{"hex", strings.Repeat("ab", 22), "is not base64"},
		{"pasted file", strings.Repeat("x", 100), `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..." is 100 characters`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePublic(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "'keyrelay id'") {
				t.Errorf("ParsePublic(%q) = %v, want an error with %q and how to get a key", tt.in, err, tt.want)
			}
		})
	}
	for _, s := range lowOrder {
		if _, err := ParsePublic(s); err == nil || !strings.Contains(err.Error(), "low-order point") {
			t.Errorf("ParsePublic(%s) = %v, want a low-order point refused", s, err)
		}
	}
}

// TestLowOrderNeedsTheCheck: the low-order points are valid X25519 public
// keys to crypto/ecdh (it checks only their length), so without
// CheckPublic ParsePublic would take them.
func TestLowOrderNeedsTheCheck(t *testing.T) {
	for _, s := range lowOrder {
		b, _ := base64.StdEncoding.DecodeString(s)
		var pub [KeyLen]byte
		copy(pub[:], b)
		if err := CheckPublic(pub); err == nil {
			t.Errorf("CheckPublic(%s) = nil", s)
		}
	}
	if err := CheckPublic(alice(t).Public()); err != nil {
		t.Errorf("CheckPublic(Alice) = %v", err)
	}
}

// TestFileRoundTrip: an identity file names the public key and
// fingerprint in its comment, says to keep it secret, and loads back to
// the same identity; Write without replace keeps an existing file, with
// replace it installs the new one with mode 0600.
func TestFileRoundTrip(t *testing.T) {
	id := alice(t)
	enc := string(Encode(id))
	for _, want := range []string{rfc7748AlicePublic, "d52a-a19d-2bfb-acfb", "keep it secret", base64.StdEncoding.EncodeToString(id.Private().Bytes())} {
		if !strings.Contains(enc, want) {
			t.Errorf("identity file lacks %q:\n%s", want, enc)
		}
	}
	path := filepath.Join(t.TempDir(), "identity")
	if err := Write(path, id, false); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || got.Public() != id.Public() || string(got.Private().Bytes()) != string(id.Private().Bytes()) {
		t.Fatalf("Load = %v, %v; want Alice", got, err)
	}
	other, _ := Generate()
	if err := Write(path, other, false); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("Write over an identity without replace = %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, other, true); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(path); err != nil || got.Public() != other.Public() {
		t.Errorf("after replace Load = %v, %v; want the new identity", got, err)
	}
}

// TestLoadRefusesUnprotected: an identity file others can read or write
// is refused, as ssh refuses an unprotected private key, naming the mode
// and the chmod that fixes it; 0600 and 0400 load.
func TestLoadRefusesUnprotected(t *testing.T) {
	for _, tt := range []struct {
		perm fs.FileMode
		want string // "" when it loads
	}{
		{0o600, ""},
		{0o400, ""},
		{0o644, "has mode 0644: other users can read it (chmod 600 PATH)"},
		{0o640, "has mode 0640: other users can read it (chmod 600 PATH)"},
		{0o620, "has mode 0620: other users can write it (chmod 600 PATH)"},
		{0o606, "has mode 0606: other users can read and write it (chmod 600 PATH)"},
	} {
		path := filepath.Join(t.TempDir(), "identity")
		if err := Write(path, alice(t), false); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tt.perm); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		want := strings.ReplaceAll(tt.want, "PATH", path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("mode %#o: %v", tt.perm, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "identity file "+path+" "+want) || !errors.Is(err, secret.ErrUnprotected)):
			t.Errorf("mode %#o: Load = %v\nwant identity file %s %s", tt.perm, err, path, want)
		}
	}
}

// TestLoadOrCreate: the first call makes the identity, its directory with
// mode 0700 and the file with mode 0600, and says so; the next loads the
// same one and says it did not make it.
func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "keyrelay", "identity")
	id, created, err := LoadOrCreate(path)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate = %v, %v, %v; want a new identity", id, created, err)
	}
	for p, want := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700 | fs.ModeDir} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode(), err, want)
		}
	}
	again, created, err := LoadOrCreate(path)
	if err != nil || created || again.Public() != id.Public() {
		t.Errorf("second LoadOrCreate = %v, %v, %v; want the same identity, not made", again, created, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreate(path); !errors.Is(err, secret.ErrUnprotected) {
		t.Errorf("LoadOrCreate of a 0644 identity = %v, want it refused (not replaced)", err)
	}
	if again, err := func() (*Identity, error) { os.Chmod(path, 0o600); return Load(path) }(); err != nil || again.Public() != id.Public() {
		t.Errorf("the refused identity was replaced: %v, %v", again, err)
	}
}

// TestLoadOrCreateDanglingLink: a symlink to a missing file is not
// followed to make the identity there; the error names the link's target.
func TestLoadOrCreateDanglingLink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "identity")
	if err := os.Symlink("elsewhere", path); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadOrCreate(path)
	if err == nil || !strings.Contains(err.Error(), "symbolic link to elsewhere, which does not exist") {
		t.Errorf("LoadOrCreate through a dangling link = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was made: %v", err)
	}
}

// TestDecodeErrors: what is not an identity file says so and how to make
// one.
func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{"", "# only a comment\n", "not base64!", "AAAA", base64.StdEncoding.EncodeToString(make([]byte, 33))} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), "'keyrelay id'") {
			t.Errorf("Decode(%q) = %v", in, err)
		}
	}
}

// FuzzParsePublic: no text panics ParsePublic; what it accepts is a
// key's canonical text (it formats back to the same string) and not a
// low-order point.
func FuzzParsePublic(f *testing.F) {
	f.Add(rfc7748AlicePublic)
	for _, s := range lowOrder {
		f.Add(s)
	}
	f.Add("")
	f.Add(rfc7748AlicePublic[:42] + "p=")
	f.Fuzz(func(t *testing.T, s string) {
		pub, err := ParsePublic(s)
		if err != nil {
			if pub != [KeyLen]byte{} {
				t.Errorf("ParsePublic(%q) failed but returned %x", s, pub)
			}
			return
		}
		if got := FormatPublic(pub); got != s {
			t.Errorf("ParsePublic(%q) accepted a non-canonical form of %s", s, got)
		}
		if CheckPublic(pub) != nil {
			t.Errorf("ParsePublic(%q) accepted a low-order point", s)
		}
	})
}
