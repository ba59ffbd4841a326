package secret

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	key, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(path, key, false); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %#o, want 0600", st.Mode().Perm())
	}
	got, warn, err := Load(path)
	if err != nil || warn != "" || string(got) != string(key) {
		t.Fatalf("Load = %x, %q, %v", got, warn, err)
	}
	if err := Write(path, key, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without --force: %v", err)
	}
	os.Chmod(path, 0o644)
	other, _ := Generate()
	if err := Write(path, other, true); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("--force left mode %#o", st.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	if _, warn, _ := Load(path); !strings.Contains(warn, "chmod 600") {
		t.Errorf("no warning for mode 0644: %q", warn)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, in := range []string{"", "not base64!", "AAAA", "# only a comment\n"} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), "keygen") {
			t.Errorf("Decode(%q) = %v", in, err)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a, b := make([]byte, Len), make([]byte, Len)
	b[31] = 1
	fa, fb := Fingerprint(a), Fingerprint(b)
	if fa == fb || len(fa) != 19 || fa != Fingerprint(a) {
		t.Errorf("fingerprints %q %q", fa, fb)
	}
	if !strings.Contains(string(Encode(a)), fa) {
		t.Error("the key file does not show its fingerprint")
	}
}

// TestLoadAtTheBound: a key file padded with comments to exactly
// MaxFileSize bytes still loads; the bound refuses only what is larger.
func TestLoadAtTheBound(t *testing.T) {
	key, _ := Generate()
	enc := Encode(key)
	pad := "#" + strings.Repeat("x", MaxFileSize-len(enc)-2) + "\n"
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, append([]byte(pad), enc...), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != MaxFileSize {
		t.Fatalf("test file is %d bytes, want %d", st.Size(), MaxFileSize)
	}
	if got, _, err := Load(path); err != nil || string(got) != string(key) {
		t.Errorf("Load of a %d-byte key file = %x, %v", MaxFileSize, got, err)
	}
}

// TestCheckMode: a file open to other users, among the permissions asked
// about, is named with its mode, what others can do and the chmod that
// fixes it; the owner's own bits never count.
func TestCheckMode(t *testing.T) {
	for _, tt := range []struct {
		perm, mask fs.FileMode
		want       string // "" for no error
	}{
		{0o600, 0o077, ""},
		{0o400, 0o077, ""},
		{0o700, 0o077, ""},
		{0o644, 0o077, "F has mode 0644: other users can read it (chmod 600 F)"},
		{0o620, 0o077, "F has mode 0620: other users can write it (chmod 600 F)"},
		{0o666, 0o077, "F has mode 0666: other users can read and write it (chmod 600 F)"},
		{0o755, 0o077, "F has mode 0755: other users can read it (chmod 600 F)"},
		{0o610, 0o077, "F has mode 0610: other users can open it (chmod 600 F)"},
		{0o644, 0o022, ""},
		{0o664, 0o022, "F has mode 0664: other users can write it (chmod 644 F)"},
		{0o777, 0o022, "F has mode 0777: other users can write it (chmod 644 F)"},
	} {
		err := CheckMode("peers file", "F", tt.perm, tt.mask)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckMode(%#o, mask %#o) = %v, want nil", tt.perm, tt.mask, err)
		case tt.want != "" && (err == nil || err.Error() != "peers file "+tt.want || !errors.Is(err, ErrUnprotected)):
			t.Errorf("CheckMode(%#o, mask %#o) = %v\nwant peers file %s (wrapping ErrUnprotected)", tt.perm, tt.mask, err, tt.want)
		}
	}
}
