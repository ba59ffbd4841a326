package secret

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// SIDs of the tests: this user, another, and groups of others.
const (
	me          = "S-1-5-21-1-2-3-1001"
	otherUser   = "S-1-5-21-1-2-3-1002"
	sidUsers    = "S-1-5-32-545"
	sidAuthUser = "S-1-5-11"
)

// names stands for the account lookup: well-known names, none for users.
func names(sid string) string {
	return map[string]string{sidEveryone: "Everyone", sidUsers: `BUILTIN\Users`, sidAuthUser: `NT AUTHORITY\Authenticated Users`}[sid]
}

// keyrelays is the DACL keyrelay makes its files with (privateSA).
var keyrelays = []ace{
	{Type: aceAllowed, Mask: fileAllAccess, SID: me},
	{Type: aceAllowed, Mask: fileAllAccess, SID: sidSystem},
	{Type: aceAllowed, Mask: fileAllAccess, SID: sidAdministrators},
}

// with is keyrelay's DACL and more entries.
func with(more ...ace) []ace { return append(slices.Clone(keyrelays), more...) }

// TestJudgeFile (PROTOCOL.md §8.1, on Windows): the identity, key and
// peers files are checked by ACL. Only the user, SYSTEM, Administrators
// (and TrustedInstaller) may hold the rights checked: for a private key
// (CheckMode's 0o077) reading or writing its content, deleting it or
// changing its ACL or owner; for the peers file (0o022) all but reading.
// An owner other than those is refused, and so is no DACL at all (which
// lets everyone in). Each case gives the error's exact words, with the
// icacls that fixes it.
func TestJudgeFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    security
		mask uint32 // CheckMode's
		want string // "" if accepted, else the error after "identity file F "
	}{
		{"as keyrelay makes it", security{Owner: me, DACL: keyrelays}, 0o077, ""},
		{"as keyrelay makes it under Wine (no Administrators entry shown)", security{Owner: me, DACL: []ace{{Mask: fileAllAccess, SID: sidSystem}, {Mask: fileAllAccess, SID: me}}}, 0o077, ""},
		{"made by an elevated process: owned by Administrators", security{Owner: sidAdministrators, DACL: keyrelays}, 0o077, ""},
		{"owned by TrustedInstaller", security{Owner: sidTrustedInstaller, DACL: keyrelays}, 0o077, ""},
		{"an empty DACL: the owner alone", security{Owner: me, DACL: []ace{}}, 0o077, ""},
		{"Everyone may read its attributes and ACL", security{Owner: me, DACL: with(ace{Mask: readControl | synchronize | fileReadAttributes | fileReadEA, SID: sidEveryone})}, 0o077, ""},
		{"Everyone read, inherit-only", security{Owner: me, DACL: with(ace{Flags: aceInheritOnly, Mask: fileGenericRead, SID: sidEveryone})}, 0o077, ""},
		{"Everyone denied", security{Owner: me, DACL: with(ace{Type: aceDenied, Mask: fileAllAccess, SID: sidEveryone})}, 0o077, ""},
		{"OWNER RIGHTS, the owner being the user", security{Owner: me, DACL: with(ace{Mask: fileAllAccess, SID: sidOwnerRights})}, 0o077, ""},
		{"Everyone read (Wine's mode 0644)", security{Owner: me, DACL: with(ace{Mask: 0x1200a9, SID: sidEveryone})}, 0o077,
			`has an ACL that lets other users read it: Everyone (S-1-1-0) can read it (icacls "F" /remove:g *S-1-1-0)`},
		{"Users generic read, inherited", security{Owner: me, DACL: with(ace{Flags: aceInherited, Mask: genericRead, SID: sidUsers})}, 0o066,
			`has an ACL that lets other users read it: BUILTIN\Users (S-1-5-32-545) can read it (icacls "F" /inheritance:d, then icacls "F" /remove:g *S-1-5-32-545)`},
		{"another user, full control", security{Owner: me, DACL: with(ace{Mask: fileAllAccess, SID: otherUser})}, 0o077,
			`has an ACL that lets other users read and write it: S-1-5-21-1-2-3-1002 can read, write and delete it and change its access list (icacls "F" /remove:g *S-1-5-21-1-2-3-1002)`},
		{"Everyone generic all, object entry", security{Owner: me, DACL: with(ace{Type: aceAllowedObject, Mask: genericAll, SID: sidEveryone})}, 0o077,
			`has an ACL that lets other users read and write it: Everyone (S-1-1-0) can read, write and delete it and change its access list (icacls "F" /remove:g *S-1-1-0)`},
		{"Everyone read and Users write, two entries each", security{Owner: me, DACL: with(
			ace{Mask: fileReadData, SID: sidEveryone}, ace{Mask: fileAppendData, SID: sidUsers},
			ace{Type: aceAllowedCallback, Mask: fileReadData, SID: sidUsers}, ace{Flags: aceInherited, Mask: fileExecute | fileReadData, SID: sidEveryone})}, 0o077,
			`has an ACL that lets other users read and write it: Everyone (S-1-1-0) can read it, BUILTIN\Users (S-1-5-32-545) can read and write it (icacls "F" /inheritance:d, then icacls "F" /remove:g *S-1-1-0 *S-1-5-32-545)`},
		{"Authenticated Users may change its ACL alone", security{Owner: me, DACL: with(ace{Mask: writeDAC, SID: sidAuthUser})}, 0o077,
			`has an ACL that lets other users read and write it: NT AUTHORITY\Authenticated Users (S-1-5-11) can change its access list (icacls "F" /remove:g *S-1-5-11)`},
		{"owned by another user", security{Owner: otherUser, DACL: keyrelays}, 0o077,
			`belongs to S-1-5-21-1-2-3-1002, who can change who may read and write it: use a file of your own`},
		{"OWNER RIGHTS, the owner being another user", security{Owner: otherUser, DACL: with(ace{Mask: fileAllAccess, SID: sidOwnerRights})}, 0o077,
			`belongs to S-1-5-21-1-2-3-1002, who can change who may read and write it: use a file of your own`},
		{"no DACL", security{Owner: me, NullDACL: true}, 0o077,
			`has no access list (a NULL DACL): everyone can read and write it (icacls "F" /inheritance:r /grant:r *S-1-5-21-1-2-3-1001:F)`},
		{"an entry of a type not known", security{Owner: me, DACL: with(ace{Type: 0x11, Mask: fileReadData, SID: sidEveryone})}, 0o077,
			`has access entries keyrelay cannot read (type 0x11), which may let other users in: give it an ACL of plain entries for you, SYSTEM and Administrators only`},
		// The peers file: others may read it, not change it.
		{"peers: Everyone read", security{Owner: me, DACL: with(ace{Mask: 0x1200a9, SID: sidEveryone})}, 0o022, ""},
		{"peers: Everyone append", security{Owner: me, DACL: with(ace{Mask: fileAppendData, SID: sidEveryone})}, 0o022,
			`has an ACL that lets other users write it: Everyone (S-1-1-0) can write it (icacls "F" /remove:g *S-1-1-0)`},
		{"peers: Everyone delete", security{Owner: me, DACL: with(ace{Mask: accessDelete, SID: sidEveryone})}, 0o022,
			`has an ACL that lets other users write it: Everyone (S-1-1-0) can delete it (icacls "F" /remove:g *S-1-1-0)`},
		{"peers: Users generic write", security{Owner: me, DACL: with(ace{Mask: genericWrite, SID: sidUsers})}, 0o022,
			`has an ACL that lets other users write it: BUILTIN\Users (S-1-5-32-545) can write it (icacls "F" /remove:g *S-1-5-32-545)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judge(tc.s, me, forbidFor(tc.mask))
			err := f.fileError("identity file", "F", me, names)
			if tc.want == "" {
				if err != nil || !f.ok() {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if want := "identity file F " + tc.want; err == nil || err.Error() != want || !errors.Is(err, ErrUnprotected) || f.ok() {
				t.Errorf("got  %v\nwant %s (wrapping ErrUnprotected)", err, want)
			}
		})
	}
}

// TestJudgeDirAbove (PROTOCOL.md §8.1, as ssh's StrictModes, on
// Windows): a directory above the file is refused when someone else owns
// it or may delete or rename what is in it, or it (FILE_DELETE_CHILD,
// DELETE, WRITE_DAC, WRITE_OWNER); adding files, as every user may in
// C:\ (the sticky directory's rule), and reading are fine. The DACLs of
// C:\ and C:\Users are Windows' own defaults; Wine's are what it shows
// for a Unix mode.
func TestJudgeDirAbove(t *testing.T) {
	const dirInherit = 0x3 // OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE
	for _, tc := range []struct {
		name string
		s    security
		want string // "" if accepted, else the error after "directory D, above the identity file F, "
	}{
		{`C:\ as Windows installs it`, security{Owner: sidTrustedInstaller, DACL: []ace{
			{Flags: dirInherit, Mask: fileAllAccess, SID: sidAdministrators},
			{Flags: dirInherit, Mask: fileAllAccess, SID: sidSystem},
			{Flags: dirInherit, Mask: 0x1200a9, SID: sidUsers},
			{Flags: dirInherit | aceInheritOnly, Mask: 0x1301bf, SID: sidAuthUser}, // (OI)(CI)(IO)(M)
			{Mask: fileAppendData, SID: sidAuthUser},                               // (AD): add subdirectories
		}}, ""},
		{`C:\Users as Windows installs it`, security{Owner: sidSystem, DACL: []ace{
			{Flags: dirInherit, Mask: fileAllAccess, SID: sidSystem},
			{Flags: dirInherit, Mask: fileAllAccess, SID: sidAdministrators},
			{Flags: dirInherit, Mask: 0x1200a9, SID: sidUsers},
			{Flags: dirInherit, Mask: 0x1200a9, SID: sidEveryone},
		}}, ""},
		{"a directory of keyrelay's", security{Owner: me, DACL: keyrelays}, ""},
		{"Wine's mode 0755", security{Owner: me, DACL: []ace{{Flags: dirInherit, Mask: fileAllAccess, SID: sidSystem}, {Flags: dirInherit, Mask: fileAllAccess, SID: me}, {Flags: dirInherit, Mask: 0x1200a9, SID: sidEveryone}}}, ""},
		{"Everyone may add files", security{Owner: me, DACL: with(ace{Mask: fileWriteData | fileAppendData, SID: sidEveryone})}, ""},
		{"Wine's mode 0777", security{Owner: me, DACL: []ace{{Flags: dirInherit, Mask: fileAllAccess, SID: sidSystem}, {Flags: dirInherit, Mask: fileAllAccess, SID: me}, {Flags: dirInherit, Mask: 0x1301ff, SID: sidEveryone}}},
			`has an ACL that lets other users replace the file in it: Everyone (S-1-1-0) can delete or rename it and delete files in it (icacls "D" /remove:g *S-1-1-0)`},
		{"Users modify, inherited", security{Owner: me, DACL: with(ace{Flags: aceInherited | dirInherit, Mask: 0x1301bf, SID: sidUsers})},
			`has an ACL that lets other users replace the file in it: BUILTIN\Users (S-1-5-32-545) can delete or rename it (icacls "D" /inheritance:d, then icacls "D" /remove:g *S-1-5-32-545)`},
		{"another user may change its ACL", security{Owner: me, DACL: with(ace{Mask: writeDAC, SID: otherUser})},
			`has an ACL that lets other users replace the file in it: S-1-5-21-1-2-3-1002 can change its access list (icacls "D" /remove:g *S-1-5-21-1-2-3-1002)`},
		{"owned by another user", security{Owner: otherUser, DACL: keyrelays},
			`belongs to S-1-5-21-1-2-3-1002, who can replace the file: keep it in a directory of your own`},
		{"no DACL", security{Owner: me, NullDACL: true},
			`has no access list (a NULL DACL): everyone can replace the file in it (icacls "D" /inheritance:r /grant:r *S-1-5-21-1-2-3-1001:F)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := judge(tc.s, me, forbidReplace).dirAboveError("D", "identity file", "F", me, names)
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if want := "directory D, above the identity file F, " + tc.want; err == nil || err.Error() != want || !errors.Is(err, ErrUnprotected) {
				t.Errorf("got  %v\nwant %s (wrapping ErrUnprotected)", err, want)
			}
		})
	}
}

// TestJudgePrivateDir (PROTOCOL.md §8.7, another user on the same
// machine, on Windows): the control sockets' directory is refused when
// anyone else may list, enter or change it, or owns it; reading its
// attributes and ACL is no way in.
func TestJudgePrivateDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    security
		want string
	}{
		{"as keyrelay makes it", security{Owner: me, DACL: keyrelays}, ""},
		{"Everyone may read its ACL", security{Owner: me, DACL: with(ace{Mask: readControl | fileReadAttributes, SID: sidEveryone})}, ""},
		{"Wine's mode 0755", security{Owner: me, DACL: with(ace{Mask: 0x1200a9, SID: sidEveryone})},
			`D has an ACL that lets others in: Everyone (S-1-1-0) can list and enter it; others could reach the control socket; icacls "D" /remove:g *S-1-1-0`},
		{"another user may enter it", security{Owner: me, DACL: with(ace{Mask: fileExecute, SID: otherUser})},
			`D has an ACL that lets others in: S-1-5-21-1-2-3-1002 can enter it; others could reach the control socket; icacls "D" /remove:g *S-1-5-21-1-2-3-1002`},
		{"owned by another user", security{Owner: otherUser, DACL: keyrelays},
			`D belongs to S-1-5-21-1-2-3-1002, who could answer for your sends there: the control socket must be in a directory of yours; set XDG_RUNTIME_DIR to one (or remove it, as an administrator)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := judge(tc.s, me, forbidOpen).privateDirError("D", me, names)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The property tests' SIDs: the trusted ones, and others.
var (
	trustedSIDs   = []string{me, sidSystem, sidAdministrators, sidTrustedInstaller}
	untrustedSIDs = []string{sidEveryone, sidUsers, sidAuthUser, otherUser, "S-1-3-0", "S-1-5-7"}
	aceTypes      = []uint8{aceAllowed, aceDenied, aceAllowedObject, aceDeniedObject, aceAllowedCallback, aceDeniedCallback, aceAllowedCallbackObj, aceDeniedCallbackObject, 0x2, 0x11}
	forbids       = []uint32{forbidRead, forbidWrite, forbidRead | forbidWrite, forbidReplace, forbidOpen}
)

// genACE draws an entry for any of the SIDs, with any mask, mostly of
// the bits that matter.
func genACE(sids []string) *rapid.Generator[ace] {
	return rapid.Custom(func(t *rapid.T) ace {
		mask := rapid.Uint32().Draw(t, "mask")
		if rapid.Bool().Draw(t, "few bits") {
			mask = rapid.SampledFrom([]uint32{fileReadData, fileWriteData, fileAppendData, fileExecute, fileDeleteChild, accessDelete, writeDAC, writeOwner, readControl, genericRead, genericWrite, genericAll, 0x1200a9}).Draw(t, "bit")
		}
		return ace{
			Type:  rapid.SampledFrom(aceTypes).Draw(t, "type"),
			Flags: rapid.SampledFrom([]uint8{0, aceInherited, aceInheritOnly, 0x3, 0x13}).Draw(t, "flags"),
			Mask:  mask,
			SID:   rapid.SampledFrom(sids).Draw(t, "sid"),
		}
	})
}

func genSecurity(t *rapid.T) security {
	all := slices.Concat(trustedSIDs, untrustedSIDs, []string{sidOwnerRights})
	return security{
		Owner:    rapid.SampledFrom(slices.Concat(trustedSIDs, untrustedSIDs)).Draw(t, "owner"),
		NullDACL: rapid.Float64Range(0, 1).Draw(t, "null") < 0.05,
		DACL:     rapid.SliceOfN(genACE(all), 0, 8).Draw(t, "dacl"),
	}
}

// grantsForbidden is, in the words of the rights themselves rather than
// judge's, whether e lets its SID do what forbid forbids: read (read data
// or generic read or all), write (write or append data, delete, generic
// write or all), change the ACL or owner, or for a directory delete what
// is in it.
func grantsForbidden(e ace, forbid uint32) bool {
	m := e.Mask
	switch {
	case m&(writeDAC|writeOwner|genericAll) != 0:
		return true
	case forbid&fileReadData != 0 && m&(fileReadData|genericRead) != 0:
		return true
	case forbid&fileWriteData != 0 && m&(fileWriteData|fileAppendData|genericWrite) != 0:
		return true
	case forbid&accessDelete != 0 && m&accessDelete != 0:
		return true
	case forbid&fileDeleteChild != 0 && m&fileDeleteChild != 0:
		return true
	}
	return false
}

// TestJudgeProperties (PROTOCOL.md §8.1, on Windows), over any owner and
// DACL: (1) nothing passes that lets a SID outside the user, SYSTEM,
// Administrators and TrustedInstaller, or an entry not read, have a right
// checked, or has an owner outside them, or no DACL; (2) a DACL of the
// trusted alone passes, whatever it allows or denies them; (3) taking
// entries out of one that passes keeps it passing; (4) putting an
// Everyone read or write in one anywhere makes it fail; (5) the error is
// there exactly when something was found, and names the fix.
func TestJudgeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSecurity(t)
		forbid := rapid.SampledFrom(forbids).Draw(t, "forbid")
		f := judge(s, me, forbid)
		if f.ok() {
			if !slices.Contains(trustedSIDs, s.Owner) || s.NullDACL {
				t.Fatalf("passed: owner %s, null DACL %v", s.Owner, s.NullDACL)
			}
			for _, e := range s.DACL {
				allows := e.Type == aceAllowed || e.Type == aceAllowedObject || e.Type == aceAllowedCallback || e.Type == aceAllowedCallbackObj
				if e.Flags&aceInheritOnly != 0 || e.Type == aceDenied || e.Type == aceDeniedObject || e.Type == aceDeniedCallback || e.Type == aceDeniedCallbackObject {
					continue
				}
				if !allows {
					t.Fatalf("passed with an entry of type %#x", e.Type)
				}
				if !slices.Contains(trustedSIDs, e.SID) && e.SID != sidOwnerRights && grantsForbidden(e, forbid) {
					t.Fatalf("passed, forbid %#x, with %+v", forbid, e)
				}
			}
			// (3): any entries taken out.
			keep := rapid.SliceOfNDistinct(rapid.IntRange(0, max(len(s.DACL)-1, 0)), 0, len(s.DACL), rapid.ID).Draw(t, "keep")
			var fewer []ace
			for _, i := range keep {
				if i < len(s.DACL) {
					fewer = append(fewer, s.DACL[i])
				}
			}
			if g := judge(security{Owner: s.Owner, DACL: fewer}, me, forbid); !g.ok() {
				t.Fatalf("passed, but not with entries %v of it: %+v", keep, g)
			}
			// (4): an Everyone entry put anywhere.
			bit := uint32(fileReadData)
			if forbid&fileReadData == 0 {
				bit = accessDelete
			}
			at := rapid.IntRange(0, len(s.DACL)).Draw(t, "at")
			more := slices.Insert(slices.Clone(s.DACL), at, ace{Type: aceAllowed, Mask: bit, SID: sidEveryone})
			if g := judge(security{Owner: s.Owner, DACL: more}, me, forbid); g.ok() || !slices.ContainsFunc(g.Grants, func(x grant) bool { return x.SID == sidEveryone }) {
				t.Fatalf("Everyone %#x at %d passed: %+v", bit, at, g)
			}
		}
		// (5)
		err := f.fileError("key file", "F", me, names)
		if (err == nil) != f.ok() || (err != nil && !errors.Is(err, ErrUnprotected)) {
			t.Fatalf("ok %v, error %v", f.ok(), err)
		}
		if len(f.Grants) > 0 && f.Owner == "" && !f.Null && !strings.Contains(err.Error(), `icacls "F" `) {
			t.Fatalf("no fix named: %v", err)
		}
	})
	// (2), drawn apart: the trusted alone.
	rapid.Check(t, func(t *rapid.T) {
		s := security{
			Owner: rapid.SampledFrom(trustedSIDs).Draw(t, "owner"),
			DACL:  rapid.SliceOfN(genACE(append(slices.Clone(trustedSIDs), sidOwnerRights)), 0, 8).Draw(t, "dacl"),
		}
		for i := range s.DACL {
			s.DACL[i].Type = rapid.SampledFrom(aceTypes[:8]).Draw(t, "known type")
		}
		forbid := rapid.SampledFrom(forbids).Draw(t, "forbid")
		if f := judge(s, me, forbid); !f.ok() {
			t.Fatalf("the trusted alone refused: %+v", f)
		}
	})
}

// TestForbidFor: CheckMode's Unix masks say what an ACL may not give.
func TestForbidFor(t *testing.T) {
	for mask, want := range map[uint32]uint32{
		0o077: forbidRead | forbidWrite,
		0o066: forbidRead | forbidWrite,
		0o022: forbidWrite,
		0o011: 0,
	} {
		if got := forbidFor(mask); got != want {
			t.Errorf("forbidFor(%#o) = %#x, want %#x", mask, got, want)
		}
	}
}
