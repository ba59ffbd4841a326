//go:build windows

// Command winacl shows and changes a file's or directory's DACL through
// the Windows security API, for the tests where icacls is not there to do
// it (Wine 8's icacls and cacls are stubs that print nothing and change
// nothing):
//
//	winacl show PATH         prints its owner and DACL as SDDL
//	winacl set PATH SDDL     gives it the DACL of SDDL ("D:P(A;;FA;;;SY)...")
//	winacl remove PATH SID   takes away the entries allowing SID anything,
//	                         as icacls PATH /remove:g *SID does
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	path := os.Args[2]
	var err error
	switch {
	case os.Args[1] == "show" && len(os.Args) == 3:
		var sd *windows.SECURITY_DESCRIPTOR
		sd, err = read(path)
		if err == nil {
			fmt.Println(sd.String())
		}
	case os.Args[1] == "set" && len(os.Args) == 4:
		err = set(path, os.Args[3])
	case os.Args[1] == "remove" && len(os.Args) == 4:
		err = remove(path, os.Args[3])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "winacl:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: winacl show PATH | set PATH SDDL | remove PATH SID")
	os.Exit(2)
}

func read(path string) (*windows.SECURITY_DESCRIPTOR, error) {
	return windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
}

// set gives path the DACL of sddl, protected (nothing inherited from the
// directory above, where the system honours the flag).
func set(path, sddl string) error {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("%q: %w", sddl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("%q has no DACL: %w", sddl, err)
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}

// remove sets path's DACL to what it is less the allowing entries whose
// SID is sid ("S-1-1-0" or an SDDL alias such as "WD").
func remove(path, sid string) error {
	want, err := windows.StringToSid(sid)
	if err != nil {
		return fmt.Errorf("SID %q: %w", sid, err)
	}
	sd, err := read(path)
	if err != nil {
		return err
	}
	text := sd.String()
	i := strings.Index(text, "D:")
	if i < 0 {
		return fmt.Errorf("%s: no DACL in %s", path, text)
	}
	dacl := text[i+2:]
	if j := strings.Index(dacl, "S:"); j >= 0 {
		dacl = dacl[:j]
	}
	flags, aces, _ := strings.Cut(dacl, "(")
	kept := "D:P" + strings.TrimPrefix(flags, "P")
	for _, a := range strings.Split(strings.TrimSuffix(aces, ")"), ")(") {
		f := strings.Split(a, ";")
		if len(f) < 6 {
			return fmt.Errorf("%s: an entry %q not understood", path, a)
		}
		if s, err := windows.StringToSid(f[5]); err == nil && f[0] == "A" && s.Equals(want) {
			continue
		}
		kept += "(" + a + ")"
	}
	return set(path, kept)
}
