//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKeyFileNotRegular (PROTOCOL.md §8.1): a FIFO given as the key file,
// whose open would wait for a writer, and /dev/zero, which has no end, end
// send and recv at once with exit status 1 and an error naming the file and
// what is wanted.
func TestKeyFileNotRegular(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, is string }{
		{fifo, "is a named pipe (FIFO)"},
		{"/dev/zero", "is a character device"},
	} {
		for _, args := range [][]string{
			{"recv", "--inject", "log", "--listen", "127.0.0.1:0"},
			{"send", "--to", "127.0.0.1:9", "--script", script(t, "tap KeyA\n")},
		} {
			// Not start: it would wait for recv to listen.
			p := startCmd(t, exec.Command(bin, append(args, "--key-file", tt.path)...), "")
			if code := p.wait(10 * time.Second); code != 1 {
				t.Errorf("%s --key-file %s exited %d, want 1\n%s", args[0], tt.path, code, p.stderr)
			}
			want := "keyrelay: key file " + tt.path + " " + tt.is + ", not a key file: want a regular file"
			if !strings.Contains(p.stderr.String(), want) {
				t.Errorf("%s --key-file %s printed:\n%s\nwant %s...", args[0], tt.path, p.stderr, want)
			}
		}
	}
}
