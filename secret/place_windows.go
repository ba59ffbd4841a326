package secret

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows keeps who may open a file in its ACL, which no mode shows: Go
// reports 0666 for any writable file, 0777 for any directory. The checks
// here read the owner and the DACL (readSecurity) and leave the decision
// to judge (acl.go); keyrelay makes its files and directories with an
// ACL for the user, SYSTEM and Administrators alone (privateSA), so that
// they pass whatever the directory they are made in lets others do.

func checkMode(name, path string, perm, mask fs.FileMode) error {
	return checkACL(name, path, forbidFor(uint32(mask)))
}

// checkACL checks the file at path against forbid (judge).
func checkACL(name, path string, forbid uint32) error {
	me, err := currentUser()
	if err != nil {
		return err
	}
	s, err := readSecurity(path)
	if err != nil {
		return fmt.Errorf("unable to check who may open the %s %s: %w", name, path, err)
	}
	return judge(s, me, forbid).fileError(name, path, me, accountName)
}

func checkPlace(name, path string) error {
	if err := checkACL(name, path, forbidWrite); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	me, err := currentUser()
	if err != nil {
		return err
	}
	for _, d := range dirsAbove(path) {
		s, err := readSecurity(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("unable to check who may change directory %s, above the %s %s: %w", d, name, path, err)
		}
		if err := judge(s, me, forbidReplace).dirAboveError(d, name, path, me, accountName); err != nil {
			return err
		}
	}
	return nil
}

// CheckPrivateDir checks that no one but this user (SYSTEM and
// Administrators aside) can open dir, the control sockets' directory, by
// its owner and ACL; perm, which shows nothing here, is not read.
func CheckPrivateDir(dir string, perm fs.FileMode) error {
	me, err := currentUser()
	if err != nil {
		return err
	}
	s, err := readSecurity(dir)
	if err != nil {
		return fmt.Errorf("unable to check who may open %s: %w", dir, err)
	}
	return judge(s, me, forbidOpen).privateDirError(dir, me, accountName)
}

// currentUser is the SID this process runs as (its token's user).
var currentUser = sync.OnceValues(func() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("unable to find which user this process runs as: %w", err)
	}
	return u.User.Sid.String(), nil
})

// accountName is the name of the account sid is ("Everyone",
// `BUILTIN\Users`), or "" if it has none here.
func accountName(sid string) string {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return ""
	}
	account, domain, _, err := s.LookupAccount("")
	switch {
	case err != nil || account == "":
		return ""
	case domain == "":
		return account
	}
	return domain + `\` + account
}

// readSecurity reads the owner and DACL of the file or directory at path
// (its links followed).
func readSecurity(path string) (security, error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return security{}, &fs.PathError{Op: "GetNamedSecurityInfo", Path: path, Err: err}
	}
	var s security
	owner, _, err := sd.Owner()
	if err != nil {
		return security{}, fmt.Errorf("the owner of %s: %w", path, err)
	}
	if owner != nil {
		s.Owner = owner.String()
	}
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || (err == nil && dacl == nil):
		s.NullDACL = true
		return s, nil
	case err != nil:
		return security{}, fmt.Errorf("the DACL of %s: %w", path, err)
	}
	for i := range uint32(dacl.AceCount) {
		var a *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &a); err != nil {
			return security{}, fmt.Errorf("entry %d of the DACL of %s: %w", i, path, err)
		}
		s.DACL = append(s.DACL, ace{Type: a.Header.AceType, Flags: a.Header.AceFlags, Mask: uint32(a.Mask), SID: aceSID(a)})
	}
	return s, nil
}

// aceSID is the SID of an allowing or denying entry, plain, callback or
// object (whose SID follows its flags and the GUIDs they say are there),
// or "" for another type or one whose SID does not fit in it.
func aceSID(a *windows.ACCESS_ALLOWED_ACE) string {
	var off uintptr
	switch a.Header.AceType {
	case aceAllowed, aceDenied, aceAllowedCallback, aceDeniedCallback:
		off = unsafe.Offsetof(a.SidStart)
	case aceAllowedObject, aceDeniedObject, aceAllowedCallbackObj, aceDeniedCallbackObject:
		// Mask, then Flags (a uint32), then up to two GUIDs.
		flags := *(*uint32)(unsafe.Pointer(&a.SidStart))
		off = unsafe.Offsetof(a.SidStart) + 4 + 16*uintptr(bits.OnesCount32(flags&3))
	default:
		return ""
	}
	// A SID is at least 8 bytes: revision, count, authority.
	if off+8 > uintptr(a.Header.AceSize) {
		return ""
	}
	sid := (*windows.SID)(unsafe.Add(unsafe.Pointer(a), off))
	if !sid.IsValid() || off+uintptr(windows.GetLengthSid(sid)) > uintptr(a.Header.AceSize) {
		return ""
	}
	return sid.String()
}

// privateSA is the security keyrelay makes its files and directories
// with: the DACL's entries are the user's, SYSTEM's and Administrators',
// each with full access; protected (P), so that nothing of the directory
// above is inherited; for a directory, inherited by what is made inside
// (OICI).
func privateSA(dir bool) (*windows.SecurityAttributes, error) {
	me, err := currentUser()
	if err != nil {
		return nil, err
	}
	inherit := ""
	if dir {
		inherit = "OICI"
	}
	sd, err := windows.SecurityDescriptorFromString(fmt.Sprintf("D:P(A;%[1]s;FA;;;%[2]s)(A;%[1]s;FA;;;SY)(A;%[1]s;FA;;;BA)", inherit, me))
	if err != nil {
		return nil, fmt.Errorf("unable to make a private ACL: %w", err)
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}, nil
}

// createPrivate creates the file name, which must not exist, with
// privateSA's ACL from the start: no handle to it can be opened by
// another user, even before its content is written.
func createPrivate(name string) (*os.File, error) {
	sa, err := privateSA(false)
	if err != nil {
		return nil, err
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	// Shared for reading and writing as os.OpenFile shares its files.
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, sa, windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// mkdirPrivate makes dir, and the directories above it that are missing,
// with privateSA's ACL.
func mkdirPrivate(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: windows.ERROR_DIRECTORY}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirPrivate(parent); err != nil {
			return err
		}
	}
	sa, err := privateSA(true)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	if err := windows.CreateDirectory(p, sa); err != nil {
		// Made at the same time by another process: fine if a directory.
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	return nil
}
