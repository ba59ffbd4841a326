package secret

// CheckPlace checks that no other user can change the file at path (a
// key file, the identity, the peers file, the config file: name is what
// it is called), in place or by way of where it is: the file must belong
// to this user or root and be writable by no one else, and each directory
// above it must belong to this user or root, none of them writable by
// group or others unless sticky (as /tmp, where others cannot rename what
// is ours), as ssh's StrictModes checks a user's files and their
// directories. A directory that can be written by others lets them swap
// the file for one of theirs, whatever the file's own mode. Both the path
// as given and the path its links lead to are checked; a file or
// directory that does not exist yet is skipped (keyrelay makes them
// private). The error wraps ErrUnprotected and names the fix.
//
// The check is the system's (checkPlace, a function per OS): on Unix by
// owner and mode bits; on Windows, where access is kept in ACLs that a
// mode does not show, none is made yet.
func CheckPlace(name, path string) error { return checkPlace(name, path) }
