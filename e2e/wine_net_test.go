//go:build e2e

package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/wintest"
)

// wineNetwork runs keyrelay.exe under Wine against the Linux keyrelay over
// loopback UDP, both ways (README "Platforms"): its sockets are
// internal/netio/udpsock's, whose own tests run first, built for Windows. The two
// machines pair as the README says, 'keyrelay peers add' on both with the
// key the other's 'keyrelay id' prints, and share no key file. watch is
// winwatch, the window recv --inject windows types into.
func wineNetwork(t *testing.T, env *wintest.Env, watch *wintest.Proc) {
	// udpsock: the socket tests that hold udpsock's sockets to Go's own
	// (Linux), run against the Winsock ones.
	t.Run("udpsock", func(t *testing.T) {
		out, stderr, code := env.Output(t, "", "udpsock.test", "-test.v", "-test.count=1")
		if code != 0 || !strings.Contains(out, "\nPASS\n") {
			t.Fatalf("udpsock's tests under Wine: exit %d\n%s%s", code, out, stderr)
		}
		t.Logf("udpsock's tests under Wine: %d passed", strings.Count(out, "--- PASS"))
	})
	// secret: the ACL checks' own tests (PROTOCOL.md §8.1 on Windows),
	// through the Windows security API: what keyrelay makes, read back,
	// and ACLs given to refuse. (Not the tests that use t.TempDir: its
	// clean-up, os.RemoveAll, fails under Wine 8, "unlinkat: Invalid
	// function".)
	t.Run("secret", func(t *testing.T) {
		out, stderr, code := env.Output(t, "", "secret.test", "-test.v", "-test.count=1", "-test.run", "^Test(Windows|Judge|ForbidFor)")
		if code != 0 || !strings.Contains(out, "\nPASS\n") || !strings.Contains(out, "--- PASS: TestWindowsEveryoneReadIsRefused") {
			t.Fatalf("secret's tests under Wine: exit %d\n%s%s", code, out, stderr)
		}
		t.Logf("secret's tests under Wine: %d passed", strings.Count(out, "--- PASS"))
	})

	// The Linux machine: its own config directory (identity, peers) and
	// no shared key file; its recv listens on a port known before it
	// starts, so that keyrelay.exe's peers file can name it.
	linHome := t.TempDir()
	linEnv := []string{"XDG_CONFIG_HOME=" + linHome, "KEYRELAY_KEY_FILE="}
	linAddr, winAddr := reservePort(t), reservePort(t)
	paired := false
	var idPath, winKey string

	// cli: keyrelay.exe makes its identity (in %APPDATA%\keyrelay) and
	// reads it back on the next run, adds a peer, and without -tags
	// robotgo says how to get --inject robotgo.
	t.Run("cli", func(t *testing.T) {
		out1, err1, code1 := env.Output(t, "", "keyrelay", "id")
		out2, err2, code2 := env.Output(t, "", "keyrelay", "id")
		if code1 != 0 || code2 != 0 {
			t.Fatalf("keyrelay.exe id: exit %d, then %d\n%s%s", code1, code2, err1, err2)
		}
		if !strings.Contains(err1, "made a new identity") || strings.Contains(err2, "made a new identity") {
			t.Errorf("the first id should make the identity, the second read it:\n%s\n%s", err1, err2)
		}
		if out1 != out2 || len(strings.Fields(out1)) != 2 {
			t.Fatalf("keyrelay.exe id printed %q, then %q: want one key and fingerprint, the same twice", out1, out2)
		}
		winKey = strings.Fields(out1)[0]
		if m := regexp.MustCompile(`made a new identity at (\S+)`).FindStringSubmatch(err1); m != nil {
			idPath = m[1]
		}

		code, out, stderr := runWithEnv(t, linEnv, "id")
		if code != 0 {
			t.Fatalf("keyrelay id: exit %d\n%s", code, stderr)
		}
		linKey := strings.Fields(out)[0]
		if _, stderr, code := env.Output(t, "", "keyrelay", "peers", "add", "linbox", linKey, "--addr", linAddr); code != 0 {
			t.Fatalf("keyrelay.exe peers add: exit %d\n%s", code, stderr)
		}
		if code, _, stderr := runWithEnv(t, linEnv, "peers", "add", "winbox", winKey, "--addr", winAddr); code != 0 {
			t.Fatalf("keyrelay peers add: exit %d\n%s", code, stderr)
		}
		out, stderr, code = env.Output(t, "", "keyrelay", "peers")
		if code != 0 || !regexp.MustCompile(`(?m)^linbox +`+regexp.QuoteMeta(linKey)+` .* `+regexp.QuoteMeta(linAddr)+`$`).MatchString(out) {
			t.Errorf("keyrelay.exe peers: exit %d, want linbox with its key and address:\n%s%s", code, out, stderr)
		}
		paired = true

		_, stderr, code = env.Output(t, "", "keyrelay", "recv", "--inject", "robotgo", "--listen", "127.0.0.1:0")
		if code == 0 || !strings.Contains(stderr, "-tags robotgo") {
			t.Errorf("keyrelay.exe recv --inject robotgo: exit %d, want a failure naming -tags robotgo:\n%s", code, stderr)
		}
	})
	if !paired {
		t.Fatal("not paired: the relays cannot run")
	}
	t.Run("files", func(t *testing.T) { wineFiles(t, env, idPath, winKey) })

	// send: keyrelay.exe plays a script to the Linux recv, which logs
	// exactly its keys; delivery confirmed, exit 0.
	t.Run("send script", func(t *testing.T) {
		recv := startWithEnv(t, linEnv, "recv", "--inject", "log", "--listen", linAddr)
		const keys = "type \"Wine é€\"\ntap KeyZ\nkey shift+KeyB\ntap Enter\n"
		_, stderr, code := env.Output(t, keys, "keyrelay", "send", "--to", "linbox", "--wait", "30s", "--script", "-")
		if code != 0 || !strings.Contains(stderr, "delivered: every receiver acknowledged") {
			t.Fatalf("keyrelay.exe send: exit %d, want 0 and delivered\n%s", code, stderr)
		}
		wineControlDir(t, env, stderr)
		got := keyNames(recv.stop())
		var want []string
		for _, c := range "Wine é€" {
			want = append(want, typed(c)+" down", typed(c)+" up")
		}
		want = append(want, "KeyZ down", "KeyZ up", "ShiftLeft down", "KeyB down", "KeyB up", "ShiftLeft up", "Enter down", "Enter up")
		if !slices.Equal(got, want) {
			t.Errorf("the Linux recv logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(recv.stderr.String(), "winbox") {
			t.Errorf("the Linux recv did not name the sender as its peer winbox:\n%s", recv.stderr)
		}
	})

	// send hook: keyrelay.exe send --input windows relays the keys typed
	// with xdotool into the Wine desktop to the Linux recv; Ctrl+C (SIGINT,
	// which Wine hands over as CTRL_C_EVENT) ends it with exit 0, every
	// key delivered.
	t.Run("send hook", func(t *testing.T) {
		recv := startWithEnv(t, linEnv, "recv", "--inject", "log", "--listen", linAddr)
		send := env.Start(t, "keyrelay", "send", "--input", "windows", "--to", "linbox", "--wait", "30s")
		if !wintest.Wait(send.ErrLines, "capturing the keys of this desktop", 60*time.Second) {
			t.Fatalf("keyrelay.exe send --input windows did not start capturing within 60s:\n%s", strings.Join(send.Seen(), "\n"))
		}
		env.Focus(t, "keyrelay winwatch")
		env.Xdotool(t, "key", "a", "Up", "shift+b")
		want := []string{"KeyA down", "KeyA up", "ArrowUp down", "ArrowUp up", "ShiftLeft down", "KeyB down", "ShiftLeft up", "KeyB up"}
		var got []string
		for len(got) < len(want) {
			l, ok := recv.next(20 * time.Second)
			if !ok {
				t.Fatalf("the Linux recv logged %q, then nothing for 20s; want %q", got, want)
			}
			if l.Action == "down" || l.Action == "up" {
				got = append(got, l.String())
			}
		}
		if err := send.Interrupt(); err != nil {
			t.Fatal(err)
		}
		code, ok := send.ExitCode(30 * time.Second)
		if !ok {
			t.Fatal("keyrelay.exe send did not end within 30s of Ctrl+C")
		}
		if errs := strings.Join(send.Seen(), "\n"); code != 0 || !strings.Contains(errs, "delivered: every receiver acknowledged") {
			t.Errorf("keyrelay.exe send after Ctrl+C: exit %d, want 0 and delivered\n%s", code, errs)
		}
		got = append(got, keyNames(recv.stop())...)
		if !slices.Equal(got, want) {
			t.Errorf("the Linux recv logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		wintest.Collect(watch.Lines, 500*time.Millisecond)
	})

	// recv: the Linux send plays a script to keyrelay.exe recv --inject
	// windows, which types it into winwatch: the same key messages
	// wininject gives it (TestWine/inject), exactly these; Ctrl+C ends
	// recv with exit 0.
	t.Run("recv", func(t *testing.T) {
		recv := env.Start(t, "keyrelay", "recv", "--inject", "windows", "--listen", winAddr)
		if !wintest.Wait(recv.ErrLines, "listening on", 60*time.Second) {
			t.Fatalf("keyrelay.exe recv did not listen within 60s:\n%s", strings.Join(recv.Seen(), "\n"))
		}
		env.Focus(t, "keyrelay winwatch")
		wintest.Collect(watch.Lines, 300*time.Millisecond)
		keys := script(t, "tap KeyA\nkey shift+KeyB\ntap ArrowUp\ntype \"é@\"\ntap Enter\n")
		if code, _, stderr := runWithEnv(t, linEnv, "send", "--to", "winbox", "--wait", "30s", "--script", keys); code != 0 {
			t.Fatalf("keyrelay send to keyrelay.exe recv: exit %d\n%s", code, stderr)
		}
		got := wintest.Collect(watch.Lines, time.Second)
		want := []string{
			"WM_KEYDOWN vk=0x41 scan=0x1e ext=0", "WM_CHAR U+0061", "WM_KEYUP vk=0x41 scan=0x1e ext=0",
			"WM_KEYDOWN vk=0x10 scan=0x2a ext=0", "WM_KEYDOWN vk=0x42 scan=0x30 ext=0", "WM_CHAR U+0042",
			"WM_KEYUP vk=0x42 scan=0x30 ext=0", "WM_KEYUP vk=0x10 scan=0x2a ext=0",
			"WM_KEYDOWN vk=0x26 scan=0x48 ext=1", "WM_KEYUP vk=0x26 scan=0x48 ext=1",
			"WM_KEYDOWN vk=0xe7 scan=0xe9 ext=0", "WM_CHAR U+00E9", "WM_KEYUP vk=0xe7 scan=0xe9 ext=0",
			"WM_KEYDOWN vk=0xe7 scan=0x40 ext=0", "WM_CHAR U+0040", "WM_KEYUP vk=0xe7 scan=0x40 ext=0",
			"WM_KEYDOWN vk=0x0d scan=0x1c ext=0", "WM_CHAR U+000D", "WM_KEYUP vk=0x0d scan=0x1c ext=0",
		}
		if !slices.Equal(got, want) {
			t.Errorf("winwatch got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if err := recv.Interrupt(); err != nil {
			t.Fatal(err)
		}
		code, ok := recv.ExitCode(30 * time.Second)
		if !ok {
			t.Fatal("keyrelay.exe recv did not end within 30s of Ctrl+C")
		}
		if errs := strings.Join(recv.Seen(), "\n"); code != 0 || !regexp.MustCompile(`new session .*: linbox`).MatchString(errs) {
			t.Errorf("keyrelay.exe recv after Ctrl+C: exit %d, want 0 and the Linux sender's session\n%s", code, errs)
		}
	})

	t.Run("autostart", func(t *testing.T) { wineAutostart(t, env, watch, linEnv, winAddr) })
}

// wineAutostart: 'keyrelay.exe autostart add recv' writes the per-user Run
// entry, which Wine's wineboot runs as Windows does at sign-in (README
// "Platforms"): the recv it starts types what a Linux send sends into
// winwatch, and logs to its file; remove takes the entry away again.
func wineAutostart(t *testing.T, env *wintest.Env, watch *wintest.Proc, linEnv []string, winAddr string) {
	_, stderr, code := env.Output(t, "", "keyrelay", "autostart", "add", "recv", "--", "--listen", winAddr, "--inject", "windows")
	if code != 0 {
		t.Fatalf("keyrelay.exe autostart add: exit %d\n%s", code, stderr)
	}
	list, stderr, code := env.Output(t, "", "keyrelay", "autostart", "list")
	m := regexp.MustCompile(`(?m)^recv\t(.*keyrelay\.exe autostart run recv --listen ` + regexp.QuoteMeta(winAddr) + ` --inject windows)\tlog (.*)$`).FindStringSubmatch(list)
	if code != 0 || m == nil {
		t.Fatalf("keyrelay.exe autostart list: exit %d, want recv's entry:\n%s%s", code, list, stderr)
	}
	reg, err := env.Wine(t, "reg", "query", `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`, "/v", "keyrelay recv")
	if err != nil || !strings.Contains(reg, m[1]) {
		t.Fatalf("reg query of the Run key: %v, want %s:\n%s", err, m[1], reg)
	}
	// The session starts: wineboot runs HKCU's Run entries.
	env.SignIn(t)
	t.Cleanup(func() { env.Wine(t, "taskkill", "/F", "/IM", "keyrelay.exe") })
	env.Focus(t, "keyrelay winwatch")
	wintest.Collect(watch.Lines, 300*time.Millisecond)
	keys := script(t, "tap KeyQ\ntype \"ok\"\n")
	if code, _, stderr := runWithEnv(t, linEnv, "send", "--to", "winbox", "--wait", "60s", "--script", keys); code != 0 {
		t.Fatalf("keyrelay send to the recv started at sign-in: exit %d\n%s", code, stderr)
	}
	got := wintest.Collect(watch.Lines, time.Second)
	if chars := wmChars(got); chars != "qok" {
		t.Errorf("winwatch got %q from the recv started at sign-in, want qok; messages:\n%s", chars, strings.Join(got, "\n"))
	}
	unix, err := env.Wine(t, "winepath", "-u", m[2])
	if err != nil {
		t.Fatalf("winepath -u %s: %v", m[2], err)
	}
	b, err := os.ReadFile(strings.TrimSpace(unix))
	if err != nil || !strings.Contains(string(b), "keyrelay autostart: ") || !strings.Contains(string(b), "listening on "+winAddr) || !regexp.MustCompile(`new session .*: linbox`).Match(b) {
		t.Errorf("the log %s (%v) should say it started, listens on %s and the Linux sender's session:\n%s", m[2], err, winAddr, b)
	}
	if _, stderr, code := env.Output(t, "", "keyrelay", "autostart", "remove", "recv"); code != 0 {
		t.Fatalf("keyrelay.exe autostart remove: exit %d\n%s", code, stderr)
	}
	if list, _, code := env.Output(t, "", "keyrelay", "autostart", "list"); code != 0 || list != "" {
		t.Errorf("autostart list after remove: exit %d, %q; want nothing", code, list)
	}
	if reg, err := env.Wine(t, "reg", "query", `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`, "/v", "keyrelay recv"); err == nil {
		t.Errorf("the Run entry is still there after remove:\n%s", reg)
	}
}

// keyNames are recv's key lines (keyLines) as they print ("KeyA down").
func keyNames(ls []line) []string {
	var out []string
	for _, l := range keyLines(ls) {
		out = append(out, l.String())
	}
	return out
}
