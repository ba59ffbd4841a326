package secret

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// These run on Windows, and under Wine in e2e's TestWine (secret.test.exe):
// the ACLs keyrelay makes, read back through the system, and the checks
// of ACLs given through the system, as icacls gives them.

// tempDir is a new directory for the test, made by MkdirPrivate, removed
// when the test ends. Not t.TempDir: under Wine 8 Go's os.RemoveAll
// fails ("unlinkat: Invalid function") where os.Remove works; and Wine's
// SetNamedSecurityInfo adds the entries the directory above passes on
// whatever the flags say, so the directory above must pass on none of
// others'.
func tempDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "secret-test-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "d")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var all []string
		filepath.WalkDir(parent, func(p string, _ fs.DirEntry, err error) error {
			all = append(all, p)
			return nil
		})
		// Deepest first: what is in a directory before the directory.
		slices.Reverse(all)
		for _, p := range all {
			if err := os.Remove(p); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	})
	return dir
}

// setDACL gives path the DACL of sddl ("D:P(...)"), as icacls would.
func setDACL(t *testing.T, path, sddl string) {
	t.Helper()
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatalf("SetNamedSecurityInfo(%s, %s): %v", path, sddl, err)
	}
}

// private is privateSA's DACL, with inheritance for a directory.
func private(t *testing.T, inherit string) string {
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	return "D:P(A;" + inherit + ";FA;;;" + me + ")(A;" + inherit + ";FA;;;SY)(A;" + inherit + ";FA;;;BA)"
}

// sddl is path's owner and DACL as SDDL, for logs.
func sddl(path string) string {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err.Error()
	}
	return sd.String()
}

// TestWindowsFilesArePrivate (PROTOCOL.md §8.1, on Windows): what keyrelay
// makes (a key file new and replaced, a file beside another, directories
// and the ones above them) has an ACL that gives no one but the user,
// SYSTEM and Administrators any right, whatever the directory it is made
// in lets others do: read back, nothing is found in it.
func TestWindowsFilesArePrivate(t *testing.T) {
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	base := tempDir(t)
	// A directory that lets everyone do everything, inherited by what is
	// made in it: what keyrelay makes there must not take it.
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	setDACL(t, open, "D:P(A;OICI;FA;;;WD)")
	dir := filepath.Join(open, "a", "b")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	key, _ := Generate()
	made := map[string]func(p string) error{
		"Write":               func(p string) error { return Write(p, key, false) },
		"Write --force":       func(p string) error { return Write(p, key, true) },
		"ReplaceFile 0644":    func(p string) error { return ReplaceFile(p, []byte("x"), 0o644) },
		"WriteNew in an open": func(p string) error { return WriteNew(p, []byte("x")) },
	}
	for name, make := range made {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if name == "WriteNew in an open" {
			p = filepath.Join(open, "f")
		}
		if err := make(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := readSecurity(p)
		if err != nil {
			t.Fatal(err)
		}
		if f := judge(s, me, forbidOpen|forbidRead|forbidWrite); !f.ok() || !trusted(s.Owner, me) {
			t.Errorf("%s made %s with %s: %+v", name, p, sddl(p), f)
		}
		t.Logf("%s: %s", name, sddl(p))
	}
	for _, d := range []string{filepath.Join(open, "a"), dir} {
		if err := CheckPrivateDir(d, 0); err != nil {
			t.Errorf("MkdirPrivate made %s with %s: %v", d, sddl(d), err)
		}
	}
	if err := MkdirPrivate(dir); err != nil {
		t.Errorf("MkdirPrivate of a directory there: %v", err)
	}
}

// TestWindowsEveryoneReadIsRefused (PROTOCOL.md §8.1, on Windows): a key
// file whose ACL lets Everyone read it is refused, naming who and the
// icacls that fixes it; the peers file's check (others may read it)
// passes it; once the entry is gone, it loads again.
func TestWindowsEveryoneReadIsRefused(t *testing.T) {
	path := filepath.Join(tempDir(t), "key")
	key, _ := Generate()
	if err := Write(path, key, false); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("Load of a key file as Write makes it: %v", err)
	}
	setDACL(t, path, private(t, "")+"(A;;FR;;;WD)")
	t.Logf("with Everyone read: %s", sddl(path))
	_, err := Load(path)
	if err == nil || !errors.Is(err, ErrUnprotected) || !strings.Contains(err.Error(), "key file "+path+" has an ACL that lets other users read it: Everyone (S-1-1-0) can read it") || !strings.Contains(err.Error(), `(icacls "`+path+`" /remove:g *S-1-1-0)`) {
		t.Errorf("Load with Everyone read = %v; want it refused, naming Everyone and the icacls", err)
	}
	if err := CheckMode("peers file", path, 0o666, 0o022); err != nil {
		t.Errorf("the peers file's check refused a file others may only read: %v", err)
	}
	setDACL(t, path, private(t, ""))
	if got, err := Load(path); err != nil || string(got) != string(key) {
		t.Errorf("Load after the entry is gone = %x, %v", got, err)
	}
}

// TestWindowsNoDACLIsRefused: a file with no DACL, which lets everyone do
// everything, is refused. (Wine keeps no DACL: it shows it as the Unix
// mode 0777, an entry for Everyone.)
func TestWindowsNoDACLIsRefused(t *testing.T) {
	path := filepath.Join(tempDir(t), "identity")
	if err := WriteNew(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	err := CheckMode("identity file", path, 0o666, 0o077)
	if err == nil || !errors.Is(err, ErrUnprotected) {
		t.Errorf("no DACL (%s): %v, want it refused", sddl(path), err)
	}
	t.Logf("no DACL, read back as %s: %v", sddl(path), err)
}

// TestWindowsDirOthersCanWriteIsRefused (PROTOCOL.md §8.1, as ssh's
// StrictModes, on Windows): a file in a directory whose ACL lets Everyone
// delete what is in it is refused, naming the directory; as the
// directory was made, it passes.
func TestWindowsDirOthersCanWriteIsRefused(t *testing.T) {
	dir := filepath.Join(tempDir(t), "keyrelay")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "peers.toml")
	if err := WriteNew(path, []byte("")); err != nil {
		t.Fatal(err)
	}
	if err := CheckPlace("peers file", path); err != nil {
		t.Fatalf("CheckPlace as made: %v", err)
	}
	setDACL(t, dir, private(t, "OICI")+"(A;OICI;0x1301ff;;;WD)")
	t.Logf("with Everyone modify: %s", sddl(dir))
	err := CheckPlace("peers file", path)
	if err == nil || !errors.Is(err, ErrUnprotected) || !strings.HasPrefix(err.Error(), "directory "+dir+", above the peers file "+path+", has an ACL that lets other users replace the file in it: Everyone (S-1-1-0) can delete or rename it and delete files in it") || !strings.Contains(err.Error(), `icacls "`+dir+`" /remove:g *S-1-1-0`) {
		t.Errorf("CheckPlace with Everyone modify on the directory = %v; want it refused, naming the directory", err)
	}
	setDACL(t, dir, private(t, "OICI"))
	if err := CheckPlace("peers file", filepath.Join(dir, "missing")); err != nil {
		t.Errorf("CheckPlace of a file not made yet: %v", err)
	}
}

// TestWindowsControlDir (PROTOCOL.md §8.7, on Windows): the control
// sockets' directory as MkdirPrivate makes it passes CheckPrivateDir; one
// that Everyone may list and enter does not.
func TestWindowsControlDir(t *testing.T) {
	dir := filepath.Join(tempDir(t), "keyrelay--1")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(dir, 0o777); err != nil {
		t.Errorf("as made (%s): %v", sddl(dir), err)
	}
	setDACL(t, dir, private(t, "OICI")+"(A;OICI;0x1200a9;;;WD)")
	if err := CheckPrivateDir(dir, 0o777); err == nil || !strings.Contains(err.Error(), "Everyone (S-1-1-0) can list and enter it; others could reach the control socket") {
		t.Errorf("with Everyone list (%s): %v; want it refused", sddl(dir), err)
	}
}
