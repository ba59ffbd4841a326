//go:build e2e

package e2e

// recv --inject wayland typing into Chromium on Wayland (--ozone-platform=
// wayland) in a headless sway: a page with a textarea, served by the test,
// reports each keydown's code and the textarea's value back with fetch.
// The sentences hold characters no seat layout has, typed through recv's
// character keymap (DESIGN.md, the wayland injector's character keys).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// needChromiumWayland skips without Chromium, except in CI, where make deps
// installs it.
func needChromiumWayland(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium missing in CI: .ci/run must install it (make deps: chromium)")
		}
		t.Skip("needs chromium (apt-get install chromium)")
	}
}

// wlPage is the page Chromium shows, and what it reported.
type wlPage struct {
	mu     sync.Mutex
	ready  bool
	value  string         // the textarea's value at its last input event
	seq    int            // that event's number: reports may come out of order
	codes  map[int]string // keydown event.code by report number
	ups    map[int]string // keyup event.code by report number
	last   int            // the highest report number
	notify chan struct{}
}

const wlPageHTML = `<!doctype html><meta charset="utf-8"><title>keyrelay</title>
<textarea id="t" autofocus style="width:95vw;height:90vh"></textarea>
<script>
const t = document.getElementById("t");
let seq = 0;
function report(o) { o.seq = ++seq; fetch("/log", {method: "POST", body: JSON.stringify(o)}); }
t.addEventListener("keydown", e => report({kind: "keydown", code: e.code}));
t.addEventListener("keyup", e => report({kind: "keyup", code: e.code}));
t.addEventListener("input", () => report({kind: "input", value: t.value}));
function ready() {
  t.focus();
  if (document.hasFocus() && document.activeElement === t) report({kind: "ready"});
  else setTimeout(ready, 100);
}
ready();
</script>`

// serve serves the page and takes its reports.
func (p *wlPage) serve(t *testing.T) string {
	t.Helper()
	p.notify = make(chan struct{}, 1)
	p.codes, p.ups = map[int]string{}, map[int]string{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, wlPageHTML)
	})
	mux.HandleFunc("POST /log", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Kind, Code, Value string
			Seq               int
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		switch m.Kind {
		case "ready":
			p.ready = true
		case "keydown":
			p.codes[m.Seq] = m.Code
		case "keyup":
			p.ups[m.Seq] = m.Code
		case "input":
			if m.Seq > p.seq {
				p.value, p.seq = m.Value, m.Seq
			}
		}
		p.last = max(p.last, m.Seq)
		p.mu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitReady waits for the page to have the keyboard focus.
func (p *wlPage) waitReady(timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		ok := p.ready
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-p.notify:
		case <-deadline:
			return false
		}
	}
}

// waitValue waits until the textarea holds want, or nothing has changed
// for quiet; it returns the value then.
func (p *wlPage) waitValue(want string, quiet time.Duration) string {
	for {
		p.mu.Lock()
		got := p.value
		p.mu.Unlock()
		if got == want {
			return got
		}
		select {
		case <-p.notify:
		case <-time.After(quiet):
			return got
		}
	}
}

// codesSince lists the keydown codes reported after report seq, in order.
func (p *wlPage) codesSince(seq int) string {
	return strings.Join(since(p.codes, seq), " ")
}

// since lists the codes of m reported after report seq, in order.
func since(m map[int]string, seq int) []string {
	var n []int
	for s := range m {
		if s > seq {
			n = append(n, s)
		}
	}
	slices.Sort(n)
	var codes []string
	for _, s := range n {
		codes = append(codes, m[s])
	}
	return codes
}

// wlChromium is a Chromium the test started: its log, and whether it
// still runs.
type wlChromium struct {
	log  string
	done chan struct{}
}

// state says whether Chromium still runs, and the end of its log.
func (c *wlChromium) state() string {
	alive := "running"
	select {
	case <-c.done:
		alive = "exited"
	default:
	}
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return fmt.Sprintf("Chromium %s; the end of its log:\n%s", alive, strings.Join(lines[max(0, len(lines)-20):], "\n"))
}

// startChromiumWayland runs Chromium on sway's socket, showing url in an
// app window (which sway focuses, as the only window). It runs as the
// same unprivileged user as sway, so its sandbox works and --no-sandbox is
// not needed.
func startChromiumWayland(t *testing.T, s swayEnv, url string) *wlChromium {
	t.Helper()
	dir, err := os.MkdirTemp("", "keyrelay-chromium")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"env", "-i", "PATH=/usr/bin:/bin", "HOME="+dir, "XDG_RUNTIME_DIR="+s.runtime, "WAYLAND_DISPLAY="+s.display,
		"chromium", "--ozone-platform=wayland", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--app="+url)
	c := &wlChromium{log: filepath.Join(t.TempDir(), "chromium.log"), done: make(chan struct{})}
	log, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); log.Close(); close(c.done) }()
	// Ended before sway (cleanups run last in, first out).
	t.Cleanup(func() { cmd.Process.Kill(); <-c.done })
	return c
}

// wlChromiumSentences hold characters no seat layout here types (ü ß ñ ú
// € — ø ä, «», ¿¡), and ASCII, typed as characters; spaces and line ends
// are the Space and Enter keys (SCRIPT_FORMAT.md, type). No character
// beyond the BMP: Chromium's key events carry one UTF-16 unit (its
// ui::KeyEvent::GetCharacter), so an emoji typed as a key arrives cut to
// its low 16 bits, whatever types it (DESIGN.md).
var wlChromiumSentences = []string{
	"Grüße aus München: 5 € für Señor Núñez — ø ä.",
	"Ünïcödé: Straße, niño, canción, señal — €100, øre, Bär?",
	"Fußgänger über die Brücke — mañana está aquí, 20 €.",
	"Ærø, Ø, å; ¿Qué tal? ¡Olé! — «Très» bien, ça va #1 @ 9:30 & ~/x_y=[z].",
}

// TestWaylandChromium: every character typed through recv --inject
// wayland arrives in a Chromium textarea, in order, none lost or doubled,
// on US, German and French seats, at the default pace and at 1 ms
// (DESIGN.md invariant 8 for characters; README, the wayland injector);
// then killedHoldingKey, in the same Chromium.
func TestWaylandChromium(t *testing.T) {
	t.Parallel()
	needSway(t)
	needChromiumWayland(t)
	s := startSway(t)
	page := &wlPage{}
	url := page.serve(t)
	seatKeyboard(t, s, "us")
	chromium := startChromiumWayland(t, s, url)
	if !page.waitReady(60 * time.Second) {
		t.Fatalf("Chromium's page did not get the keyboard focus in 60 s: %s", chromium.state())
	}
	var want strings.Builder
	for _, l := range wlChromiumSentences {
		want.WriteString(l + "\n")
	}
	for _, layout := range []string{"us", "de", "fr"} {
		for _, pace := range []string{"10ms", "1ms"} {
			t.Run("characters/"+layout+"/"+pace, func(t *testing.T) {
				seatKeyboard(t, s, layout)
				recv := startWithEnv(t, s.env(), "recv", "--inject", "wayland", "--listen", "127.0.0.1:0")
				page.mu.Lock()
				before, seqBefore := page.value, page.seq
				page.mu.Unlock()
				var sc strings.Builder
				fmt.Fprintf(&sc, "pace %s\n", pace)
				for _, l := range wlChromiumSentences {
					fmt.Fprintf(&sc, "type %q\n", l+"\n")
				}
				code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", script(t, sc.String()))
				if code != 0 {
					t.Fatalf("send exited %d:\n%s", code, stderr)
				}
				// Quiet for 10 s: Chromium may stall that long on a
				// loaded machine, and then type the rest.
				got := page.waitValue(before+want.String(), 10*time.Second)
				recv.stop()
				got, _ = strings.CutPrefix(got, before)
				lost, extra := runeDiff(want.String(), got)
				t.Logf("%d sentences, %d characters: %d lost, %d extra", len(wlChromiumSentences), len([]rune(want.String())), lost, extra)
				if got != want.String() {
					page.mu.Lock()
					codes := page.codesSince(seqBefore)
					page.mu.Unlock()
					t.Errorf("the textarea got\n%q\nwant\n%q\nkeydown codes: %s\nrecv:\n%s\n%s", got, want.String(), codes, recv.stderr.String(), chromium.state())
				}
			})
		}
	}
	t.Run("killed holding KeyA", func(t *testing.T) { killedHoldingKey(t, s, page, chromium) })
}

// runeDiff counts the runes of want missing from got and those of got not
// in want, by their longest common subsequence.
func runeDiff(want, got string) (lost, extra int) {
	a, b := []rune(want), []rune(got)
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			default:
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	common := prev[len(b)]
	return len(a) - common, len(b) - common
}

// killedHoldingKey: recv --inject wayland killed (SIGKILL) while it holds
// KeyA leaves nothing pressed in Chromium, which repeats a held key itself
// (from wl_keyboard.repeat_info: 600 ms, then 25 a second on sway):
// wlroots releases the killed client's keys, and Chromium gets the keyup
// and stops (DESIGN.md, the wayland injector when recv dies).
func killedHoldingKey(t *testing.T, s swayEnv, page *wlPage, chromium *wlChromium) {
	t.Helper()
	recv := startWithEnv(t, s.env(), "recv", "--inject", "wayland", "--listen", "127.0.0.1:0")
	page.mu.Lock()
	first := page.last
	page.mu.Unlock()
	start(t, "send", "--to", recv.addr, "--script", script(t, "down KeyA\nsleep 1h\n"))
	// Held past the repeat delay: Chromium repeats it.
	deadline := time.After(10 * time.Second)
	for {
		page.mu.Lock()
		n := len(since(page.codes, first))
		page.mu.Unlock()
		if n >= 3 {
			break
		}
		select {
		case <-page.notify:
		case <-deadline:
			t.Fatalf("Chromium got %d keydowns of a held KeyA in 10 s, want it repeating: %s", n, chromium.state())
		}
	}
	recv.cmd.Process.Kill()
	recv.wait(10 * time.Second)
	page.mu.Lock()
	mark := page.last
	page.mu.Unlock()
	time.Sleep(2 * time.Second) // the window in which repeats are counted
	page.mu.Lock()
	downs, ups := since(page.codes, mark), since(page.ups, mark)
	value := page.value
	page.mu.Unlock()
	t.Logf("after SIGKILL: %d keydowns, keyups %v; the textarea holds %d characters", len(downs), ups, len([]rune(value)))
	// A keydown may have been in flight when recv died; more is a repeat
	// going on.
	if len(downs) > 1 {
		t.Errorf("Chromium got %d keydowns in the 2 s after recv was killed holding KeyA: %v", len(downs), downs)
	}
	if !slices.Contains(ups, "KeyA") {
		t.Errorf("Chromium got no keyup of KeyA after recv was killed (keyups %v)", ups)
	}
}
