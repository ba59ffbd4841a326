package secret

import (
	"fmt"
	"io/fs"
	"path/filepath"
)

// CheckMode returns an error wrapping ErrUnprotected when users other
// than the owner may open the file at path (name is what it is called:
// "key file") in a way mask forbids: mask is in Unix permission bits,
// 0o077 for a private key (no access at all), 0o066 (neither read nor
// write), 0o022 for a file others may read but not change. The error
// names the file, what others can do and the command that fixes it, as
// ssh does for an unprotected private key.
//
// The check is the system's (checkMode, a function per OS): on Unix of
// perm, the file's permission bits (modeError), with the chmod that
// fixes it; on Windows, where no mode shows who may open a file (Go
// reports 0666 for any writable one), of the file's ACL (acl.go): others
// than the user, SYSTEM and Administrators may not read it (for the read
// bits) or write, delete or re-permit it (for the write bits), with the
// icacls that fixes it.
func CheckMode(name, path string, perm, mask fs.FileMode) error {
	return checkMode(name, path, perm, mask)
}

// modeError is CheckMode by permission bits: an error when perm gives
// users other than the owner any of the permissions in mask.
func modeError(name, path string, perm, mask fs.FileMode) error {
	open := perm & mask
	if open == 0 {
		return nil
	}
	var can string
	switch r, w := open&0o044 != 0, open&0o022 != 0; {
	case r && w:
		can = "read and write it"
	case r:
		can = "read it"
	case w:
		can = "write it"
	default:
		can = "open it"
	}
	// The fix keeps what the owner has and drops execute bits, which a
	// data file has no use for: 0644 becomes 600 for a private key, 0775
	// becomes 644 for a file only its owner may change.
	fix := perm &^ mask &^ 0o111
	return unprotectedError(fmt.Sprintf("%s %s has mode %#o: other users can %s (chmod %o %s)", name, path, perm, can, fix, path))
}

// CheckPlace checks that no other user can change the file at path (a
// key file, the identity, the peers file, the config file: name is what
// it is called), in place or by way of where it is: the file must belong
// to this user or an administrator (root) and be writable by no one
// else, and each directory above it must belong to this user or an
// administrator, none of them letting others remove what is in it (on
// Unix: writable by group or others unless sticky, as /tmp, where others
// cannot rename what is ours), as ssh's StrictModes checks a user's files
// and their directories. A directory that others can remove files from
// lets them swap the file for one of theirs, whatever the file's own
// permissions. Both the path as given and the path its links lead to are
// checked; a file or directory that does not exist yet is skipped
// (keyrelay makes them private). The error wraps ErrUnprotected and names
// the fix.
//
// The check is the system's (checkPlace, a function per OS): on Unix by
// owner and mode bits; on Windows by owner and ACL (acl.go), where
// SYSTEM, Administrators and TrustedInstaller count as root does, and
// adding files to a directory (which C:\ allows every user) is allowed
// as a sticky directory allows it.
func CheckPlace(name, path string) error { return checkPlace(name, path) }

// MkdirPrivate makes dir and any directory above it that is missing, each
// one only this user can open (on Unix mode 0700; on Windows an ACL for
// the user, SYSTEM and Administrators alone, that what is made inside
// inherits). Directories that exist are left as they are: CheckPlace and
// the callers' checks say what is wrong with them.
func MkdirPrivate(dir string) error { return mkdirPrivate(dir) }

// dirsAbove lists the directories above path, up to the root: those of
// the path as given (made absolute) and, if links lead elsewhere, those
// of the path they lead to.
func dirsAbove(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	var out []string
	add := func(p string) {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			out = append(out, d)
			if filepath.Dir(d) == d {
				return
			}
		}
	}
	add(abs)
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		add(real)
	}
	return out
}
