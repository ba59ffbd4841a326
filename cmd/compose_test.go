package cmd

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCommandLineSourceTakesTheConfigsGrab: the config file and the
// command line compose. A key source given on the command line (or in
// the environment) over the config file's input takes the settings that
// belonged to that input with it: grab, and device, when the new source
// has no use for them; one that can grab (evdev) keeps them. Set beside
// their source, or above it, or where no source was set, they stay, and a
// grab that cannot apply is refused naming the flag that turns it off.
func TestCommandLineSourceTakesTheConfigsGrab(t *testing.T) {
	const x11Grab = "[send]\nto = [\"127.0.0.1\"]\ninput = \"x11\"\ngrab = true\ndevice = [\"/dev/input/event3\"]\n"
	for _, c := range []struct {
		name, config string
		env          []string
		args         []string
		input        string
		grab         bool
		devices      int
		err          string // CheckSettings' error, "" for none
	}{
		{name: "--script over input = x11", config: x11Grab, args: []string{"--script", "-"}, input: "script"},
		{name: "--input terminal over input = x11", config: x11Grab, args: []string{"--input", "terminal"}, input: "terminal"},
		{name: "KEYRELAY_SEND_SCRIPT over input = x11", config: x11Grab, env: []string{"KEYRELAY_SEND_SCRIPT=-"}, input: "script"},
		{name: "--input evdev keeps them: it can grab and read devices", config: x11Grab, args: []string{"--input", "evdev"}, input: "evdev", grab: true, devices: 1},
		{name: "--input x11 keeps grab, not device", config: "[send]\nto = [\"127.0.0.1\"]\ninput = \"evdev\"\ngrab = true\ndevice = [\"/dev/input/event3\"]\n",
			args: []string{"--input", "x11"}, input: "x11", grab: true},
		{name: "a grab set with no source beside it stays, and is refused", config: x11Grab, env: []string{"KEYRELAY_SEND_GRAB=true"}, args: []string{"--script", "-"},
			err: `(grab from KEYRELAY_SEND_GRAB="true": --grab=false turns it off)`},
		{name: "--grab on the command line stays, and is refused with a script", config: x11Grab, args: []string{"--script", "-", "--grab"},
			err: "--grab needs --input x11, --input evdev, --input windows or --input macos (--input script has no keyboard to own)"},
		{name: "grab beside a source that cannot take it: the flag that turns it off", config: "[send]\nto = [\"127.0.0.1\"]\ninput = \"terminal\"\ngrab = true\n",
			err: "(grab = true from CONFIG:4 in [send]: --grab=false turns it off; input = \"terminal\" from CONFIG:3 in [send])"},
		{name: "--grab=false turns it off", config: "[send]\nto = [\"127.0.0.1\"]\ninput = \"terminal\"\ngrab = true\n", args: []string{"--grab=false"}, input: "terminal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := isolate(t)
			cfg := writeFile(t, filepath.Join(dir, "config.toml"), c.config)
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			var got *SendOptions
			cmd := NewCmdSend(IO{}, func(_ context.Context, o *SendOptions) error { got = o; return o.CheckSettings() })
			cmd.SetArgs(append([]string{"--config", cfg}, c.args...))
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if c.err != "" {
				if want := strings.ReplaceAll(c.err, "CONFIG", cfg); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Input != c.input || got.Grab != c.grab || len(got.Devices) != c.devices {
				t.Errorf("input %q, grab %v, devices %q; want %q, %v, %d", got.Input, got.Grab, got.Devices, c.input, c.grab, c.devices)
			}
		})
	}
}

// TestConfigSaysWhereADroppedGrabWent: keyrelay config shows a grab the
// command line's source took with it as the default, and why.
func TestConfigSaysWhereADroppedGrabWent(t *testing.T) {
	dir := isolate(t)
	writeFile(t, filepath.Join(dir, "config.toml"), "[send]\ninput = \"x11\"\ngrab = true\n")
	t.Setenv("KEYRELAY_SEND_SCRIPT", "keys.txt")
	code, out, stderr := runCmd("config", "send")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	i := slices.IndexFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, "grab = false") })
	if i < 0 || !strings.Contains(strings.Split(out, "\n")[i], "went with the input it was set with: env KEYRELAY_SEND_SCRIPT picks --input script, which takes no grab") {
		t.Errorf("keyrelay config send:\n%s", out)
	}
}
