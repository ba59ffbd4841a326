package secret

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
	// (On Windows Go shows 0666 whatever the ACL:
	// TestWindowsFilesArePrivate checks it there.)
	if st, _ := os.Stat(path); runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("mode %#o, want 0600", st.Mode().Perm())
	}
	got, err := Load(path)
	if err != nil || string(got) != string(key) {
		t.Fatalf("Load = %x, %v", got, err)
	}
	if err := Write(path, key, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("overwrite without --force: %v", err)
	}
	os.Chmod(path, 0o644)
	other, _ := Generate()
	if err := Write(path, other, true); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("--force left mode %#o", st.Mode().Perm())
	}
}

// TestLoadRefusesKeysOthersCanReach (PROTOCOL.md §8.1: the key file is
// mode 0600): a key file that group or others may read or write is
// refused, with the fix; one only its owner can reach loads.
func TestLoadRefusesKeysOthersCanReach(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows keeps access in ACLs, not mode bits")
	}
	key, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o700, true},
		{0o610, true}, // group may execute it: nothing to read or change
		{0o644, false},
		{0o640, false},
		{0o620, false},
		{0o604, false},
		{0o602, false},
		{0o666, false},
	} {
		path := filepath.Join(t.TempDir(), "k")
		if err := Write(path, key, false); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		switch {
		case tc.ok && (err != nil || string(got) != string(key)):
			t.Errorf("mode %#o: Load = %x, %v; want the key", tc.mode, got, err)
		case !tc.ok && (err == nil || got != nil || !errors.Is(err, ErrUnprotected) || !strings.Contains(err.Error(), "chmod 600 "+path)):
			t.Errorf("mode %#o: Load = %x, %v; want refused, wrapping ErrUnprotected, with the fix", tc.mode, got, err)
		}
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
	if err := WriteNew(path, append([]byte(pad), enc...)); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != MaxFileSize {
		t.Fatalf("test file is %d bytes, want %d", st.Size(), MaxFileSize)
	}
	if got, err := Load(path); err != nil || string(got) != string(key) {
		t.Errorf("Load of a %d-byte key file = %x, %v", MaxFileSize, got, err)
	}
}

// TestCheckMode: a file open to other users, among the permissions asked
// about, is named with its mode, what others can do and the chmod that
// fixes it; the owner's own bits never count. (CheckMode on Unix; on
// Windows it reads the ACL: TestJudgeFile.)
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
		err := modeError("peers file", "F", tt.perm, tt.mask)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckMode(%#o, mask %#o) = %v, want nil", tt.perm, tt.mask, err)
		case tt.want != "" && (err == nil || err.Error() != "peers file "+tt.want || !errors.Is(err, ErrUnprotected)):
			t.Errorf("CheckMode(%#o, mask %#o) = %v\nwant peers file %s (wrapping ErrUnprotected)", tt.perm, tt.mask, err, tt.want)
		}
	}
}
