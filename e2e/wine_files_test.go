//go:build e2e

package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/internal/testutil/wintest"
)

// wineFiles (PROTOCOL.md §8.1, on Windows): keyrelay.exe made its
// identity, at idPath, and its directory with an ACL for the user, SYSTEM
// and Administrators alone (winacl show; and the file's Unix mode, which
// Wine keeps the ACL in, gives others nothing). An entry letting Everyone
// read the identity gets it refused, naming the fix; so does one letting
// Everyone delete what is in its directory, for the peers file. With the
// fix applied the same identity (key) loads again. The fixes are icacls
// commands; Wine 8's icacls is a stub (it prints nothing and changes
// nothing), so winacl remove, which does what icacls /remove:g does, runs
// them.
func wineFiles(t *testing.T, env *wintest.Env, idPath, key string) {
	if idPath == "" {
		t.Fatal("keyrelay.exe id did not say where it made the identity")
	}
	dir := idPath[:strings.LastIndex(idPath, `\`)]
	owner := ""
	for _, p := range []string{dir, idPath} {
		o, aces := winACL(t, env, p)
		owner = o
		for _, a := range aces {
			if a[0] != "A" || !slices.Contains([]string{"SY", "BA", "S-1-5-18", "S-1-5-32-544", o}, a[5]) {
				t.Errorf("%s has an entry for others than its owner %s, SYSTEM and Administrators: (%s)", p, o, strings.Join(a, ";"))
			}
		}
	}
	unix, err := env.Wine(t, "winepath", "-u", idPath)
	if err != nil {
		t.Fatalf("winepath -u %s: %v", idPath, err)
	}
	if st, err := os.Stat(strings.TrimSpace(unix)); err != nil || st.Mode().Perm()&0o007 != 0 {
		t.Errorf("the identity under Wine is %s %v (%v): others may open it", strings.TrimSpace(unix), st.Mode(), err)
	}
	if out, err := env.Wine(t, "icacls", idPath); out != "" || err != nil {
		t.Logf("Wine's icacls printed %q (%v): it may no longer be a stub", out, err)
	}

	// The identity, Everyone may read it.
	winaclRun(t, env, "set", idPath, "D:P(A;;FA;;;"+owner+")(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;WD)")
	_, stderr, code := env.Output(t, "", "keyrelay", "id")
	want := "identity file " + idPath + " has an ACL that lets other users read it: Everyone (S-1-1-0) can read it (icacls \"" + idPath + "\" /remove:g *S-1-1-0); an identity others can read or change is refused"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("keyrelay.exe id, Everyone may read the identity: exit %d\n%s\nwant exit 1 and %s", code, stderr, want)
	}
	applyIcacls(t, env, stderr)
	if out, stderr, code := env.Output(t, "", "keyrelay", "id"); code != 0 || strings.Fields(out)[0] != key {
		t.Errorf("keyrelay.exe id after the fix: exit %d, %q, want the key %s\n%s", code, out, key, stderr)
	}

	// Its directory, Everyone may delete what is in it.
	winaclRun(t, env, "set", dir, "D:P(A;OICI;FA;;;"+owner+")(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;WD)")
	_, stderr, code = env.Output(t, "", "keyrelay", "peers")
	want = "directory " + dir + ", above the peers file " + dir + `\peers.toml, has an ACL that lets other users replace the file in it: Everyone (S-1-1-0) can `
	if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(icacls \""+dir+"\" /remove:g *S-1-1-0)") {
		t.Errorf("keyrelay.exe peers, Everyone may delete in its directory: exit %d\n%s\nwant a failure naming the directory: %s...", code, stderr, want)
	}
	applyIcacls(t, env, stderr)
	for _, args := range [][]string{{"peers"}, {"id"}} {
		if _, stderr, code := env.Output(t, "", "keyrelay", args...); code != 0 {
			t.Errorf("keyrelay.exe %s after the fix: exit %d\n%s", args[0], code, stderr)
		}
	}
}

// wineControlDir (PROTOCOL.md §8.7, on Windows): send made its control
// sockets' directory (%TEMP%\keyrelay--1) with an ACL for the user, SYSTEM
// and Administrators alone, and its check of it passed: stderr, send's,
// says nothing of who may open it. (Wine 8 has no AF_UNIX sockets:
// opening the socket itself fails there, "winapi error #10047", and send
// says so and goes on.)
func wineControlDir(t *testing.T, env *wintest.Env, stderr string) {
	if strings.Contains(stderr, "has mode") || strings.Contains(stderr, "others could reach the control socket") {
		t.Errorf("keyrelay.exe send refused its control directory:\n%s", stderr)
	}
	temp, err := env.Wine(t, "cmd", "/c", "echo", "%TEMP%")
	if err != nil {
		t.Fatalf("%%TEMP%% under Wine: %v", err)
	}
	dir := strings.TrimSpace(temp) + `\keyrelay--1`
	o, aces := winACL(t, env, dir)
	for _, a := range aces {
		if a[0] != "A" || !slices.Contains([]string{"SY", "BA", "S-1-5-18", "S-1-5-32-544", o}, a[5]) {
			t.Errorf("%s has an entry for others than its owner %s, SYSTEM and Administrators: (%s)", dir, o, strings.Join(a, ";"))
		}
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "no keyrelay switch or status") {
			t.Logf("keyrelay.exe send: %s", l)
		}
	}
}

// winACL is path's owner and DACL entries (each the fields of one
// "(A;OICI;FA;;;SY)"), as winacl show prints them.
func winACL(t *testing.T, env *wintest.Env, path string) (owner string, aces [][]string) {
	t.Helper()
	out := winaclRun(t, env, "show", path)
	m := regexp.MustCompile(`^O:([^:]+?)(?:G:[^:]+?)?D:[A-Z]*((?:\([^)]*\))*)\s*$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("winacl show %s: %q, want O:...D:(...)", path, out)
	}
	for _, a := range regexp.MustCompile(`\(([^)]*)\)`).FindAllStringSubmatch(m[2], -1) {
		f := strings.Split(a[1], ";")
		if len(f) != 6 {
			t.Fatalf("winacl show %s: entry %q", path, a[0])
		}
		aces = append(aces, f)
	}
	t.Logf("%s: %s", path, strings.TrimSpace(out))
	return m[1], aces
}

func winaclRun(t *testing.T, env *wintest.Env, args ...string) string {
	t.Helper()
	out, stderr, code := env.Output(t, "", "winacl", args...)
	if code != 0 {
		t.Fatalf("winacl %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// applyIcacls runs the fix an error names, (icacls "PATH" /remove:g
// *SID...), with winacl remove.
func applyIcacls(t *testing.T, env *wintest.Env, stderr string) {
	t.Helper()
	m := regexp.MustCompile(`\(icacls "([^"]+)" /remove:g ((?:\*S-[0-9-]+ ?)+)\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no icacls /remove:g fix in:\n%s", stderr)
	}
	for _, sid := range strings.Fields(m[2]) {
		winaclRun(t, env, "remove", m[1], strings.TrimPrefix(sid, "*"))
	}
}
