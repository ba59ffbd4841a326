package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorValidatesSettingsAsTheCommandsDo: doctor reads and validates
// send's and recv's settings as those commands do, so a value either
// refuses fails doctor too, with the command's words and the setting's
// place: inject = "x12" fails with its suggestion (not every injector
// "not needed for --inject x12"), as does doctor's own --inject x12 or
// --input x12; a grab the source cannot take names --grab=false.
// A command-line source takes the config's grab with it for doctor as for
// send, and with a grab doctor checks what send --grab checks at start
// (a display), not RECORD.
func TestDoctorValidatesSettingsAsTheCommandsDo(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		fail         bool
		want         []string
		notWant      []string
	}{
		{name: "inject = x12", config: "[recv]\ninject = \"x12\"\n", fail: true,
			want:    []string{`FAIL  recv's settings: CONFIG:2: inject = "x12" in [recv]: unknown injector (choose one of: `, `(did you mean "x11"?)`, "      fix: correct it ('keyrelay config recv' shows each setting and where it came from)"},
			notWant: []string{"ok    recv's settings"}},
		{name: "--inject x12", args: []string{"--inject", "x12", "--role", "recv"}, fail: true,
			want: []string{`FAIL  recv's settings: unknown --inject "x12" (choose one of: `, `(did you mean "x11"?)`}},
		{name: "--input x12", args: []string{"--input", "x12", "--role", "send"}, fail: true,
			want: []string{`FAIL  send's settings: unknown --input "x12"`, `(did you mean "x11"?)`}},
		{name: "a good recv config", config: "[recv]\ninject = \"log\"\nlisten = \"127.0.0.1:0\"\n",
			want:    []string{"ok    recv's settings: each one valid, as 'keyrelay recv' reads them"},
			notWant: []string{"send's settings: each"}},
		{name: "recv's --insecure on every address", config: "[recv]\ninject = \"log\"\n", args: []string{"--insecure", "--role", "recv"}, fail: true,
			want: []string{"FAIL  recv's settings: --insecure with --listen :7575 and no --allow would let anyone"}},
		{name: "a grab the source cannot take", config: "[send]\nto = \"127.0.0.1\"\ninput = \"terminal\"\ngrab = true\n", args: []string{"--role", "send"}, fail: true,
			want: []string{"FAIL  send's settings: --grab needs --input x11", "(grab = true from CONFIG:4 in [send]: --grab=false turns it off;"}},
		{name: "a hotkey send cannot use", config: "[send]\nto = \"127.0.0.1\"\ninput = \"x11\"\ngrab = true\nhotkey = \"KeyA+KeyB\"\n", args: []string{"--role", "send"}, fail: true,
			want: []string{`FAIL  send's settings: CONFIG:5: hotkey = "KeyA+KeyB" in [send]:`}},
		{name: "doctor's --input script takes the config's grab", config: "[send]\nto = \"127.0.0.1\"\ninput = \"x11\"\ngrab = true\n", args: []string{"--role", "send", "--input", "script"}, fail: true, // nothing answers on 127.0.0.1
			want:    []string{"ok    send's settings: each one valid"},
			notWant: []string{"--input x11 --grab"}},
		{name: "with a grab, what send checks at start", config: "[send]\nto = \"127.0.0.1\"\ninput = \"x11\"\ngrab = true\n", args: []string{"--role", "send"}, fail: true,
			want:    []string{"ok    send's settings: each one valid", "FAIL  what send checks at start (--input x11 --grab): X11 key capture unavailable: DISPLAY is not set", "      fix: give send what --input x11 needs: an X display (DISPLAY), with RECORD unless --grab"},
			notWant: []string{"X RECORD extension (--input x11 without --grab)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			t.Setenv("DISPLAY", "")
			cfgPath := filepath.Join(dir, "config.toml")
			if tc.config != "" {
				writeFile(t, cfgPath, tc.config)
			}
			text, err := doctorCmd(t, tc.args...)
			if (err != nil) != tc.fail {
				t.Errorf("err %v, want failure %v\n%s", err, tc.fail, text)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "CONFIG", cfgPath); !strings.Contains(text, w) {
					t.Errorf("%q not in the report\n%s", w, text)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(text, nw) {
					t.Errorf("%q in the report\n%s", nw, text)
				}
			}
		})
	}
}
