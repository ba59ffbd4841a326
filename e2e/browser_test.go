//go:build e2e

package e2e

// Real browsers under Xvfb as the application recv --inject x11 types into
// (DESIGN.md invariant 8, keys are keys; DESIGN.md "Characters through spare
// keycodes"): a page of the test's own, served on loopback, sends back
// each keydown's code and its textarea's text.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/notebuf"
)

// browserPage is the page: a textarea with the focus; on each key release
// and each change of its text it POSTs the text and the code of every
// keydown so far (with a count, as two fetches may arrive out of order).
const browserPage = `<!doctype html>
<meta charset="utf-8">
<title>keyrelay-e2e</title>
<textarea id="t" autofocus style="width: 90vw; height: 80vh"></textarea>
<script>
const t = document.getElementById("t"), codes = [];
let seq = 0;
function post() {
  seq++;
  fetch("/state", {method: "POST", body: JSON.stringify({seq: seq, text: t.value, codes: codes})});
}
t.addEventListener("keydown", e => codes.push(e.code));
t.addEventListener("keyup", post);
t.addEventListener("input", post);
addEventListener("load", () => { t.focus(); fetch("/ready", {method: "POST"}); });
</script>
`

// pageState is what the page last sent.
type pageState struct {
	Seq   int      `json:"seq"`
	Text  string   `json:"text"`
	Codes []string `json:"codes"`
}

// pageServer serves browserPage on loopback and keeps what it sends back.
type pageServer struct {
	url   string
	ready chan struct{}
	mu    sync.Mutex
	state pageState
}

func startPageServer(t *testing.T) *pageServer {
	t.Helper()
	p := &pageServer{ready: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, browserPage)
	})
	mux.HandleFunc("POST /ready", func(w http.ResponseWriter, r *http.Request) {
		select {
		case p.ready <- struct{}{}:
		default:
		}
	})
	mux.HandleFunc("POST /state", func(w http.ResponseWriter, r *http.Request) {
		var s pageState
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		if s.Seq > p.state.Seq {
			p.state = s
		}
		p.mu.Unlock()
	})
	srv := httptest.NewServer(mux) // 127.0.0.1, a port of its own
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/"
	return p
}

func (p *pageServer) get() pageState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// startBrowser runs browser ("chromium" or "firefox-esr") on display with
// the page, a profile of its own and, for Chromium, the flags that keep it
// off the network. Chromium's sandbox refuses to run as root: only then is
// it turned off. The browser (its process group) is killed when the test
// ends. It returns once the page has loaded.
func startBrowser(t *testing.T, display, browser string, page *pageServer) {
	t.Helper()
	profile := t.TempDir()
	var args []string
	switch browser {
	case "chromium":
		args = []string{"--no-first-run", "--disable-background-networking", "--disable-component-update",
			"--disable-sync", "--disable-gpu", "--user-data-dir=" + profile, "--app=" + page.url}
		if os.Geteuid() == 0 {
			args = append(args, "--no-sandbox")
		}
	case "firefox-esr":
		args = []string{"--kiosk", page.url, "--profile", profile, "--no-remote"}
	}
	cmd := exec.Command(browser, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "HOME="+t.TempDir())
	out := notebuf.New()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	select {
	case <-page.ready:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not load the page within 90 s:\n%s", browser, tail(out.String(), 2000))
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// focusPage gives the page's window the keyboard (the pointer over it,
// then the focus, as DESIGN.md's notes on Chromium under Xvfb say) and
// waits until a key typed reaches the textarea. It returns the text from
// which what comes next starts.
func focusPage(t *testing.T, display string, page *pageServer) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdotool", "search", "--sync", "--onlyvisible", "--name", "^keyrelay-e2e")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.Output()
	ids := strings.Fields(string(out))
	if err != nil || len(ids) == 0 {
		t.Fatalf("no window of the page: %v %q", err, out)
	}
	xdotool(t, display, "mousemove", "--window", ids[0], "100", "100")
	xdotool(t, display, "windowfocus", "--sync", ids[0])
	x := dialXTest(t, display)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(page.get().Text, " ") {
		if time.Now().After(deadline) {
			t.Fatal("keys typed on the display do not reach the page's textarea")
		}
		x.tap(t, 65) // Space, on every layout
		pollFor(500*time.Millisecond, func() bool { return strings.Contains(page.get().Text, " ") })
	}
	_, text := page.typed(t, x, page.get().Text)
	return text
}

// typed types a marker, a Return (keycode 36) and a space (65) of the
// test's own, and waits until the textarea has it: what recv typed before
// the marker is then in. It returns what the textarea got after from (the
// text it had before) up to the marker, and its whole text.
func (p *pageServer) typed(t *testing.T, x *xtestConn, from string) (got, text string) {
	t.Helper()
	x.tap(t, 36)
	x.tap(t, 65)
	if !pollFor(30*time.Second, func() bool {
		s := p.get().Text
		return len(s) > len(from) && strings.HasSuffix(s, "\n ")
	}) {
		t.Fatalf("the marker typed after the text did not reach the textarea; it has %q", p.get().Text)
	}
	text = p.get().Text
	got, ok := strings.CutPrefix(text, from)
	if !ok {
		t.Fatalf("the textarea lost what it had: %q, then %q", from, text)
	}
	return strings.TrimSuffix(got, "\n "), text
}

// browserSentences have characters the us, de and fr layouts lack (and
// emoji, and characters no layout of theirs has): more than the 18 spare
// keycodes of Xvfb's evdev keymap, so that recv lends some again.
var browserSentences = []string{
	"Grüße aus Köln: ñandú, €5 — ø æ ß ü ú.",
	"Ça coûte 3 €; señor Müller isn’t ĳ ŀ ő ű ā.",
	"Žluťoučký kůň úpěl ďábelské ódy ½ ¾ ¼ 😀 🎉.",
	"Σίσυφος ψυχή ∑ ∞ ≠ ≤ ≥ → ← Łódź þ ð œ ẞ.",
}

// keyQ is what the physical key KeyQ types on each layout.
var keyQ = map[string]string{"us": "q", "de": "q", "fr": "a"}

// TestBrowserCharacters (DESIGN.md invariant 8; DESIGN.md "Characters
// through spare keycodes"): sentences full of characters the desktop's
// layout lacks, typed by send --script through recv --inject x11, reach a
// browser's textarea exactly, every character, on US, German and French
// desktops, at the default pace and at pace 1ms. Chromium reads its keys
// and its keymap on two X connections and lost 1 to 4 such characters a
// sentence before recv gave each spare keycode remapSettle; Firefox ESR (GTK
// alone) is the second toolkit. A physical key after the text arrives as
// itself: KeyQ's code, and the layout's character for it. One browser start
// per desktop; recv's summary says every key injected, and nothing is held
// after.
func TestBrowserCharacters(t *testing.T) {
	t.Parallel()
	needX(t, "setxkbmap")
	for _, tc := range []struct{ browser, layout string }{
		{"chromium", "us"}, {"chromium", "de"}, {"chromium", "fr"}, {"firefox-esr", "de"},
	} {
		t.Run(tc.browser+"/"+tc.layout, func(t *testing.T) {
			if _, err := exec.LookPath(tc.browser); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s missing in CI: .ci/run must install it (the Makefile's DEPS)", tc.browser)
				}
				t.Skipf("needs %s (apt-get install %s)", tc.browser, tc.browser)
			}
			display := startXvfb(t)
			setLayout(t, display, tc.layout)
			page := startPageServer(t)
			startBrowser(t, display, tc.browser, page)
			base := focusPage(t, display, page)
			x := dialXTest(t, display)
			recv := startWithEnv(t, []string{"DISPLAY=" + display}, "recv", "--inject", "x11", "--listen", "127.0.0.1:0")
			var lines strings.Builder
			for _, s := range browserSentences {
				fmt.Fprintf(&lines, "type %q\n", s+"\n")
			}
			want := strings.Join(browserSentences, "\n") + "\n" + keyQ[tc.layout] + "\n"
			for _, pace := range []string{"", "pace 1ms\n"} {
				codes := len(page.get().Codes)
				keys := script(t, pace+lines.String()+"tap KeyQ\ntap Enter\n")
				if code, _, stderr := run(t, "", "send", "--to", recv.addr, "--script", keys); code != 0 {
					t.Fatalf("send exited %d:\n%s", code, stderr)
				}
				got, text := page.typed(t, x, base)
				base = text
				name := paceName(pace)
				if got != want {
					t.Errorf("%s on %s at %s: %d characters lost or wrong of %d:\n%s", tc.browser, tc.layout, name,
						editDistance([]rune(got), []rune(want)), len([]rune(want)), lineDiff(got, want))
				}
				if c := page.get().Codes[codes:]; !slices.Contains(c, "KeyQ") {
					t.Errorf("%s on %s at %s: no keydown with the code KeyQ: %q", tc.browser, tc.layout, name, c)
				}
			}
			noKeyHeld(t, display)
			stopRecv(t, recv)
		})
	}
}

// paceName names a script's pace directive.
func paceName(pace string) string {
	if pace == "" {
		return "the default pace"
	}
	return strings.TrimSpace(pace)
}

// lineDiff lists the lines of got that differ from want's.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "  got  %q\n  want %q\n", gl, wl)
		}
	}
	return b.String()
}

// editDistance is the Levenshtein distance of a and b: the characters
// lost, added or wrong.
func editDistance(a, b []rune) int {
	d := make([]int, len(b)+1)
	for j := range d {
		d[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := d[0]
		d[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev
			if a[i-1] != b[j-1] {
				sub++
			}
			prev, d[j] = d[j], min(sub, d[j]+1, d[j-1]+1)
		}
	}
	return d[len(b)]
}
