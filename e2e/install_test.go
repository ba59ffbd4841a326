//go:build e2e

package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// installed is what make install puts under PREFIX (docs/install.md): the
// binary, a man page per command and keyrelay-script(5), the completions of
// bash, zsh and fish, the systemd units (the user units, and keyrelay-hidg's
// system unit), and the README with docs/*.md beside it.
var installed = withDocs("share/doc/keyrelay/docs/", []string{
	"bin/keyrelay",
	"lib/systemd/system/keyrelay-hidg.service",
	"lib/systemd/user/keyrelay-recv.service",
	"lib/systemd/user/keyrelay-send-hook.service",
	"share/bash-completion/completions/keyrelay",
	"share/doc/keyrelay/README.md",
	"share/fish/vendor_completions.d/keyrelay.fish",
	"share/man/man1/keyrelay-completion-bash.1",
	"share/man/man1/keyrelay-completion-fish.1",
	"share/man/man1/keyrelay-completion-powershell.1",
	"share/man/man1/keyrelay-completion-zsh.1",
	"share/man/man1/keyrelay-completion.1",
	"share/man/man1/keyrelay-config.1",
	"share/man/man1/keyrelay-doctor.1",
	"share/man/man1/keyrelay-gadget.1",
	"share/man/man1/keyrelay-id.1",
	"share/man/man1/keyrelay-impair.1",
	"share/man/man1/keyrelay-keygen.1",
	"share/man/man1/keyrelay-keys.1",
	"share/man/man1/keyrelay-pair.1",
	"share/man/man1/keyrelay-peers-add.1",
	"share/man/man1/keyrelay-peers-remove.1",
	"share/man/man1/keyrelay-peers.1",
	"share/man/man1/keyrelay-recv.1",
	"share/man/man1/keyrelay-send.1",
	"share/man/man1/keyrelay-status.1",
	"share/man/man1/keyrelay-switch.1",
	"share/man/man1/keyrelay-version.1",
	"share/man/man1/keyrelay.1",
	"share/man/man5/keyrelay-script.5",
	"share/zsh/site-functions/_keyrelay",
})

// withDocs is files with each of the repository's docs/*.md under dir
// added, sorted: the README's links lead there, so they are installed
// beside it.
func withDocs(dir string, files []string) []string {
	docs, _ := filepath.Glob("../docs/*.md") // a bad pattern is the only error
	for _, d := range docs {
		files = append(files, dir+filepath.Base(d))
	}
	slices.Sort(files)
	return files
}

// files lists the regular files under dir, relative and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestMakeInstall: make install PREFIX=... and
// DESTDIR=... PREFIX=/usr install exactly the files above where each kind
// usually goes, the units run the installed binary, the installed binary
// names its commit, every installed man page renders at 80 columns
// (MANWIDTH=80 man -l, or groff) without a warning or a line past the
// edge, and make uninstall removes every file again. The binary and man
// pages are built into the test's own directories (BIN, MANOUT), so two
// runs at once share nothing.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// The commit is stamped from git: when git refuses the checkout
	// (another user's, in a container) version honestly says "unknown".
	inGit := exec.Command("git", "-C", root, "rev-parse", "HEAD").Run() == nil
	work := t.TempDir()
	build := []string{"BIN=" + filepath.Join(work, "bin", "keyrelay"), "MANOUT=" + filepath.Join(work, "man")}
	mk := func(args ...string) string {
		t.Helper()
		c := exec.Command("make", append(append([]string{"--no-print-directory", "-C", root}, build...), args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		name, destdir, prefix string
		binDir                string // as the units name it
	}{
		{"PREFIX", "", filepath.Join(work, "prefix"), filepath.Join(work, "prefix", "bin")},
		{"DESTDIR", filepath.Join(work, "stage"), "/usr", "/usr/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"PREFIX=" + tc.prefix}
			if tc.destdir != "" {
				args = append(args, "DESTDIR="+tc.destdir)
			}
			mk(append([]string{"install"}, args...)...)
			under := tc.destdir + tc.prefix
			if got := files(t, under); !slices.Equal(got, installed) {
				t.Errorf("make install %s installed\n%s\nwant\n%s", strings.Join(args, " "), strings.Join(got, "\n"), strings.Join(installed, "\n"))
			}
			for _, unit := range []string{"user/keyrelay-recv.service", "user/keyrelay-send-hook.service", "system/keyrelay-hidg.service"} {
				b, err := os.ReadFile(filepath.Join(under, "lib/systemd", unit))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), "\nExecStart="+tc.binDir+"/keyrelay ") {
					t.Errorf("%s does not run %s/keyrelay:\n%s", unit, tc.binDir, b)
				}
			}
			out, err := exec.Command(filepath.Join(under, "bin", "keyrelay"), "version").CombinedOutput()
			switch {
			case err != nil:
				t.Errorf("the installed keyrelay version: %v, %q", err, out)
			case !inGit:
				t.Logf("git cannot read %s (not a checkout, or not this user's): version says %q", root, out)
			case !strings.Contains(string(out), " commit ") || strings.Contains(string(out), "commit unknown"):
				t.Errorf("the installed keyrelay version says %q: want the commit it was built from", out)
			}
			for _, f := range installed {
				if strings.HasPrefix(f, "share/man/") {
					checkManPage(t, filepath.Join(under, f))
				}
			}
			mk(append([]string{"uninstall"}, args...)...)
			if left := files(t, under); len(left) > 0 {
				t.Errorf("make uninstall left %q", left)
			}
		})
	}
}

// checkManPage renders an installed man page as a reader at 80 columns
// would see it, and wants no formatter warning and no line wider than 80.
func checkManPage(t *testing.T, path string) {
	t.Helper()
	var c *exec.Cmd
	if _, err := exec.LookPath("man"); err == nil {
		c = exec.Command("man", "--warnings", "-l", path)
		c.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LANG=C.UTF-8", "MAN_KEEP_FORMATTING=")
	} else if _, err := exec.LookPath("groff"); err == nil {
		c = exec.Command("groff", "-man", "-Tutf8", "-ww", "-rLL=80n", "-P-cbou", path)
	} else if os.Getenv("CI") != "" {
		t.Fatal("man and groff missing in CI: .ci/run must install man-db (make deps)")
	} else {
		t.Logf("%s not rendered: needs man or groff (apt-get install man-db)", filepath.Base(path))
		return
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil || errb.Len() > 0 {
		t.Errorf("%s: %v\n%s", filepath.Base(path), err, errb.String())
		return
	}
	if !strings.Contains(out.String(), "NAME") || strings.Count(out.String(), "\n") < 10 {
		t.Errorf("%s renders as:\n%s", filepath.Base(path), out.String())
	}
	for i, l := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("%s: rendered line %d is %d columns:\n%s", filepath.Base(path), i+1, n, l)
		}
	}
}
