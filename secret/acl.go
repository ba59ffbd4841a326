package secret

import (
	"fmt"
	"slices"
	"strings"
)

// Windows keeps who may do what to a file or directory in its security
// descriptor: an owner, who can always change the rest, and a DACL, a list
// of access control entries (ACEs) that each allow or deny a SID some
// rights. place_windows.go reads a descriptor into a security; judge,
// here, decides with no system call, so that the decision is tested on
// every system.

// Access rights of files and directories (winnt.h): where a file's and a
// directory's right share a bit, both names are given.
const (
	fileReadData        = 0x1 // FILE_READ_DATA, FILE_LIST_DIRECTORY
	fileWriteData       = 0x2 // FILE_WRITE_DATA, FILE_ADD_FILE
	fileAppendData      = 0x4 // FILE_APPEND_DATA, FILE_ADD_SUBDIRECTORY
	fileReadEA          = 0x8
	fileWriteEA         = 0x10
	fileExecute         = 0x20 // FILE_EXECUTE, FILE_TRAVERSE
	fileDeleteChild     = 0x40
	fileReadAttributes  = 0x80
	fileWriteAttributes = 0x100
	accessDelete        = 0x10000
	readControl         = 0x20000
	writeDAC            = 0x40000
	writeOwner          = 0x80000
	synchronize         = 0x100000
	genericAll          = 0x10000000
	genericExecute      = 0x20000000
	genericWrite        = 0x40000000
	genericRead         = 0x80000000

	fileAllAccess      = 0x1f01ff
	fileGenericRead    = readControl | fileReadData | fileReadAttributes | fileReadEA | synchronize
	fileGenericWrite   = readControl | fileWriteData | fileWriteAttributes | fileWriteEA | fileAppendData | synchronize
	fileGenericExecute = readControl | fileReadAttributes | fileExecute | synchronize
)

// What a check forbids every SID but the trusted ones (trusted). Changing
// the DACL or the owner gives every other right, so each forbids those.
const (
	// forbidRead: reading a file's content.
	forbidRead = fileReadData | writeDAC | writeOwner
	// forbidWrite: changing a file's content, or deleting it (to put
	// another in its place).
	forbidWrite = fileWriteData | fileAppendData | accessDelete | writeDAC | writeOwner
	// forbidReplace: deleting or renaming what is in a directory above a
	// file, or the directory itself. Adding files and directories is
	// allowed, as a sticky directory allows it on Unix: what another user
	// adds is theirs, and a file of theirs is refused by its owner.
	forbidReplace = fileDeleteChild | accessDelete | writeDAC | writeOwner
	// forbidOpen: any use of a private directory but reading its
	// attributes and its ACL.
	forbidOpen = fileAllAccess &^ (readControl | synchronize | fileReadAttributes | fileReadEA)
)

// ACE types (winnt.h) and flags.
const (
	aceAllowed              = 0x0
	aceDenied               = 0x1
	aceAllowedObject        = 0x5
	aceDeniedObject         = 0x6
	aceAllowedCallback      = 0x9
	aceDeniedCallback       = 0xa
	aceAllowedCallbackObj   = 0xb
	aceDeniedCallbackObject = 0xc

	aceInheritOnly = 0x08 // INHERIT_ONLY_ACE: for what is made inside, not this object
	aceInherited   = 0x10 // INHERITED_ACE: copied from the directory above
)

// Well-known SIDs.
const (
	sidEveryone         = "S-1-1-0"
	sidOwnerRights      = "S-1-3-4"
	sidSystem           = "S-1-5-18"
	sidAdministrators   = "S-1-5-32-544"
	sidTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
)

// An ace is one access control entry as the check reads it.
type ace struct {
	Type, Flags uint8
	Mask        uint32
	SID         string // "S-1-1-0"; "" where the type's layout is not known
}

// A security is a file's or a directory's owner and DACL.
type security struct {
	Owner string
	// NullDACL: no DACL at all, which lets everyone do everything (an
	// empty one, no entries, lets no one but the owner change it).
	NullDACL bool
	DACL     []ace
}

// trusted reports whether sid may have any right to this user's files:
// the user (me), SYSTEM, Administrators (who can take any file anyway),
// and TrustedInstaller, which owns the system's own directories.
func trusted(sid, me string) bool {
	switch sid {
	case me, sidSystem, sidAdministrators, sidTrustedInstaller:
		return true
	}
	return false
}

// A finding is what judge found wrong; none (ok) lets the file be used.
type finding struct {
	// Owner is the owner's SID if it is not trusted: whoever owns a file
	// can change its DACL, whatever it says.
	Owner string
	// Null: there is no DACL, everyone has every right.
	Null bool
	// Grants are the SIDs, not trusted, that entries allow forbidden
	// rights, in the DACL's order.
	Grants []grant
	// Unread are the types of allowing entries whose layout the check
	// does not know: what they allow, and to whom, is not known.
	Unread []uint8
}

// A grant is the forbidden rights the DACL allows one SID.
type grant struct {
	SID    string
	Rights uint32
	// Inherited: one of the entries was copied from the directory above,
	// which an icacls /remove does not change.
	Inherited bool
}

func (f finding) ok() bool {
	return f.Owner == "" && !f.Null && len(f.Grants) == 0 && len(f.Unread) == 0
}

// judge finds what in s lets SIDs other than the trusted ones (me is the
// user's SID) have any of the rights in forbid.
//
// Denying entries are not counted: an entry that allows is refused even
// where one before it denies the same (Windows applies the first that
// matches, and a SID's groups are not known here), which can refuse an
// ACL that is safe but never accepts one that is not. Entries for what is
// made inside a directory only (inherit-only) give no right on it. An
// OWNER RIGHTS entry is the owner's. Generic rights count as the file
// rights they stand for.
func judge(s security, me string, forbid uint32) finding {
	var f finding
	ownerOK := trusted(s.Owner, me)
	if !ownerOK {
		f.Owner = s.Owner
	}
	if s.NullDACL {
		f.Null = true
		return f
	}
	for _, e := range s.DACL {
		if e.Flags&aceInheritOnly != 0 {
			continue
		}
		switch e.Type {
		case aceDenied, aceDeniedObject, aceDeniedCallback, aceDeniedCallbackObject:
			continue
		case aceAllowed, aceAllowedObject, aceAllowedCallback, aceAllowedCallbackObj:
		default:
			f.Unread = append(f.Unread, e.Type)
			continue
		}
		if e.SID == "" {
			f.Unread = append(f.Unread, e.Type)
			continue
		}
		if trusted(e.SID, me) || (e.SID == sidOwnerRights && ownerOK) {
			continue
		}
		rights := fileRights(e.Mask) & forbid
		if rights == 0 {
			continue
		}
		inherited := e.Flags&aceInherited != 0
		if i := slices.IndexFunc(f.Grants, func(g grant) bool { return g.SID == e.SID }); i >= 0 {
			f.Grants[i].Rights |= rights
			f.Grants[i].Inherited = f.Grants[i].Inherited || inherited
			continue
		}
		f.Grants = append(f.Grants, grant{SID: e.SID, Rights: rights, Inherited: inherited})
	}
	return f
}

// fileRights is mask with its generic rights replaced by the file rights
// they stand for (the file objects' generic mapping).
func fileRights(mask uint32) uint32 {
	if mask&genericRead != 0 {
		mask |= fileGenericRead
	}
	if mask&genericWrite != 0 {
		mask |= fileGenericWrite
	}
	if mask&genericExecute != 0 {
		mask |= fileGenericExecute
	}
	if mask&genericAll != 0 {
		mask |= fileAllAccess
	}
	return mask &^ (genericRead | genericWrite | genericExecute | genericAll)
}

// forbidFor is what CheckMode's mask (Unix permission bits others must
// not have: 0o077, 0o066, 0o022) forbids in an ACL: reading for the read
// bits, writing for the write bits.
func forbidFor(mask uint32) uint32 {
	var forbid uint32
	if mask&0o044 != 0 {
		forbid |= forbidRead
	}
	if mask&0o022 != 0 {
		forbid |= forbidWrite
	}
	return forbid
}

// rightsText says what rights let someone do to a file (dir false) or a
// directory: "read and write it", "list it and delete files in it".
func rightsText(rights uint32, dir bool) string {
	var verbs, phrases []string
	verb := func(bits uint32, file, directory string) {
		if rights&bits != 0 {
			verbs = append(verbs, map[bool]string{false: file, true: directory}[dir])
		}
	}
	phrase := func(bits uint32, p string) {
		if rights&bits != 0 {
			phrases = append(phrases, p)
		}
	}
	verb(fileReadData, "read", "list")
	verb(fileExecute, "execute", "enter")
	if dir {
		phrase(fileWriteData|fileAppendData, "add files to it")
		phrase(fileDeleteChild, "delete files in it")
	} else {
		verb(fileWriteData|fileAppendData, "write", "")
	}
	verb(accessDelete, "delete", "delete or rename")
	phrase(writeDAC|writeOwner, "change its access list")
	phrase(fileWriteEA|fileWriteAttributes, "change its attributes")
	if len(verbs) > 0 {
		phrases = append([]string{andList(verbs) + " it"}, phrases...)
	}
	return andList(phrases)
}

// andList joins words as English does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// who names a SID for an error: "Everyone (S-1-1-0)", or the SID alone
// where name (an account lookup) has none.
func who(sid string, name func(string) string) string {
	if n := name(sid); n != "" {
		return n + " (" + sid + ")"
	}
	return sid
}

// grantsText lists who can do what: "Everyone (S-1-1-0) can read it, BUILTIN\Users (S-1-5-32-545) can write it".
func (f finding) grantsText(dir bool, name func(string) string) string {
	var parts []string
	for _, g := range f.Grants {
		parts = append(parts, fmt.Sprintf("%s can %s", who(g.SID, name), rightsText(g.Rights, dir)))
	}
	return strings.Join(parts, ", ")
}

// icacls is the command that takes the grants away from path: icacls
// /remove:g of their SIDs, after /inheritance:d (the entries copied from
// above made the path's own, which /remove:g then changes) where one is
// inherited; for no DACL, one giving the user (me) alone full access.
func (f finding) icacls(path, me string) string {
	q := `"` + path + `"`
	if f.Null {
		return fmt.Sprintf("icacls %s /inheritance:r /grant:r *%s:F", q, me)
	}
	var sids []string
	inherited := false
	for _, g := range f.Grants {
		sids = append(sids, "*"+g.SID)
		inherited = inherited || g.Inherited
	}
	remove := fmt.Sprintf("icacls %s /remove:g %s", q, strings.Join(sids, " "))
	if inherited {
		return fmt.Sprintf("icacls %s /inheritance:d, then %s", q, remove)
	}
	return remove
}

// unreadText says what is wrong with entries the check cannot read.
func (f finding) unreadText(what string) string {
	var types []string
	for _, t := range f.Unread {
		types = append(types, fmt.Sprintf("%#x", t))
	}
	return fmt.Sprintf("%s has access entries keyrelay cannot read (type %s), which may let other users in: give it an ACL of plain entries for you, SYSTEM and Administrators only", what, strings.Join(types, ", "))
}

// fileError is CheckMode's error on Windows: what the ACL of the file at
// path (name is what it is called: "key file") lets other users do, and
// the icacls that fixes it. f is judge's with forbidFor's rights.
func (f finding) fileError(name, path, me string, lookup func(string) string) error {
	what := name + " " + path
	switch {
	case f.Owner != "":
		return unprotectedError(fmt.Sprintf("%s belongs to %s, who can change who may read and write it: use a file of your own", what, who(f.Owner, lookup)))
	case f.Null:
		return unprotectedError(fmt.Sprintf("%s has no access list (a NULL DACL): everyone can read and write it (%s)", what, f.icacls(path, me)))
	case len(f.Grants) > 0:
		// Whoever can change the ACL or the owner can do both.
		var r, w bool
		for _, g := range f.Grants {
			r = r || g.Rights&(fileReadData|writeDAC|writeOwner) != 0
			w = w || g.Rights&(fileWriteData|fileAppendData|accessDelete|writeDAC|writeOwner) != 0
		}
		can := "read it"
		switch {
		case r && w:
			can = "read and write it"
		case w:
			can = "write it"
		}
		return unprotectedError(fmt.Sprintf("%s has an ACL that lets other users %s: %s (%s)", what, can, f.grantsText(false, lookup), f.icacls(path, me)))
	case len(f.Unread) > 0:
		return unprotectedError(f.unreadText(what))
	}
	return nil
}

// dirAboveError is CheckPlace's error on Windows for dir, a directory
// above the file at path: who can replace the file there, and the fix. f
// is judge's with forbidReplace.
func (f finding) dirAboveError(dir, name, path, me string, lookup func(string) string) error {
	what := fmt.Sprintf("directory %s, above the %s %s,", dir, name, path)
	switch {
	case f.Owner != "":
		return unprotectedError(fmt.Sprintf("%s belongs to %s, who can replace the file: keep it in a directory of your own", what, who(f.Owner, lookup)))
	case f.Null:
		return unprotectedError(fmt.Sprintf("%s has no access list (a NULL DACL): everyone can replace the file in it (%s)", what, f.icacls(dir, me)))
	case len(f.Grants) > 0:
		return unprotectedError(fmt.Sprintf("%s has an ACL that lets other users replace the file in it: %s (%s)", what, f.grantsText(true, lookup), f.icacls(dir, me)))
	case len(f.Unread) > 0:
		return unprotectedError(f.unreadText(strings.TrimSuffix(what, ",")))
	}
	return nil
}

// privateDirError is CheckPrivateDir's error: who else can open dir (the
// control sockets' directory), and the fix. f is judge's with forbidOpen.
func (f finding) privateDirError(dir, me string, lookup func(string) string) error {
	switch {
	case f.Owner != "":
		return fmt.Errorf("%s belongs to %s, who could answer for your sends there: the control socket must be in a directory of yours; set XDG_RUNTIME_DIR to one (or remove it, as an administrator)", dir, who(f.Owner, lookup))
	case f.Null:
		return fmt.Errorf("%s has no access list (a NULL DACL): others could reach the control socket; %s", dir, f.icacls(dir, me))
	case len(f.Grants) > 0:
		return fmt.Errorf("%s has an ACL that lets others in: %s; others could reach the control socket; %s", dir, f.grantsText(true, lookup), f.icacls(dir, me))
	case len(f.Unread) > 0:
		return fmt.Errorf("%s; others could reach the control socket", f.unreadText(dir))
	}
	return nil
}
