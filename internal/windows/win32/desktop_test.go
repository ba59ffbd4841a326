package win32

import (
	"errors"
	"strings"
	"testing"
)

// TestDesktopCheckSaysWhatKeepsKeys: doctor's check of the windows source
// and injector fails where Windows keeps keys from every program (a
// service's session, the sign-in screen, a lock screen or a UAC prompt),
// with what to do, and otherwise says whether programs running as
// administrator are reached (README "Windows").
func TestDesktopCheckSaysWhatKeepsKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Desktop
		want string // in the ok line, or in the error when fails
		fail bool
	}{
		{"a service's session", Desktop{Session: 0, Input: "Default"}, "session 0", true},
		{"the secure desktop cannot be opened", Desktop{Session: 1, InputErr: errors.New("Access is denied.")}, "cannot be opened (Access is denied.)", true},
		{"the sign-in screen has the keyboard", Desktop{Session: 1, Input: "Winlogon"}, `the "Winlogon" desktop`, true},
		{"the user's desktop, not elevated", Desktop{Session: 2, Input: "Default"}, "not elevated, so programs running as administrator are not reached", false},
		{"the user's desktop, elevated", Desktop{Session: 2, Input: "Default", Elevated: true}, "elevated, so programs running as administrator are reached too", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := tc.d.Check("type")
			if tc.fail {
				if !errors.Is(err, ErrDesktop) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Check = %q, %v; want ErrDesktop saying %q", ok, err, tc.want)
				}
				return
			}
			if err != nil || !strings.Contains(ok, tc.want) {
				t.Fatalf("Check = %q, %v; want a line saying %q", ok, err, tc.want)
			}
		})
	}
}
