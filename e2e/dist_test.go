//go:build e2e

package e2e

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// distFiles is what each system's release archive holds (docs/install.md,
// docs/platforms.md), under a folder named as the archive: on Linux what
// make install installs; on macOS the same with the launchd agents instead
// of the systemd units; on Windows keyrelay.exe, the README with docs/, and
// PowerShell's completion.
func distFiles(system string) []string {
	switch system {
	case "linux":
		return installed
	case "darwin":
		var out []string
		for _, f := range installed {
			if !strings.HasPrefix(f, "lib/systemd/") {
				out = append(out, f)
			}
		}
		out = append(out, "share/keyrelay/launchd/README.md", "share/keyrelay/launchd/com.github.keyrelay.recv.plist", "share/keyrelay/launchd/com.github.keyrelay.send.plist")
		slices.Sort(out)
		return out
	case "windows":
		return withDocs("docs/", []string{"README.md", "keyrelay-completion.ps1", "keyrelay.exe"})
	}
	return nil
}

// TestMakeDist: make dist writes, for one target of each system, the
// archive that system's users unpack (a tarball on Linux and macOS, a zip
// on Windows) holding exactly distFiles, with a binary for that system
// and processor, and SHA256SUMS; made twice with the same
// SOURCE_DATE_EPOCH, every byte is the same (reproducible).
func TestMakeDist(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "go", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	dist := func(dir string) {
		t.Helper()
		c := exec.Command("make", "--no-print-directory", "-C", root, "dist", "DIST="+dir,
			"DIST_TARGETS=linux/amd64 darwin/arm64 windows/amd64",
			"BIN="+filepath.Join(work, "bin", "keyrelay"), "MANOUT="+filepath.Join(work, "man"))
		// In the environment, as a reproducible build sets it: the
		// Makefile dates the binaries and archives by it.
		c.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("make dist: %v\n%s", err, out)
		}
	}
	a, b := filepath.Join(work, "a"), filepath.Join(work, "b")
	dist(a)
	dist(b)
	sumsA, err := os.ReadFile(filepath.Join(a, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sumsB, _ := os.ReadFile(filepath.Join(b, "SHA256SUMS"))
	if !bytes.Equal(sumsA, sumsB) {
		t.Errorf("two make dist runs differ:\n%s\n%s", sumsA, sumsB)
	}
	for _, tc := range []struct {
		archive, system string
		isBinary        func([]byte) bool
	}{
		{"keyrelay-linux-amd64.tar.gz", "linux", func(b []byte) bool {
			f, err := elf.NewFile(bytes.NewReader(b))
			return err == nil && f.Machine == elf.EM_X86_64
		}},
		{"keyrelay-darwin-arm64.tar.gz", "darwin", func(b []byte) bool {
			f, err := macho.NewFile(bytes.NewReader(b))
			return err == nil && f.Cpu == macho.CpuArm64
		}},
		{"keyrelay-windows-amd64.zip", "windows", func(b []byte) bool {
			f, err := pe.NewFile(bytes.NewReader(b))
			return err == nil && f.Machine == pe.IMAGE_FILE_MACHINE_AMD64
		}},
	} {
		t.Run(tc.system, func(t *testing.T) {
			path := filepath.Join(a, tc.archive)
			if !strings.Contains(string(sumsA), "  "+tc.archive+"\n") {
				t.Errorf("SHA256SUMS does not list %s:\n%s", tc.archive, sumsA)
			}
			files := readArchive(t, path)
			top := strings.TrimSuffix(strings.TrimSuffix(tc.archive, ".tar.gz"), ".zip") + "/"
			var names []string
			for name := range files {
				rel, ok := strings.CutPrefix(name, top)
				if !ok {
					t.Errorf("%s: %s is not under %s", tc.archive, name, top)
				}
				names = append(names, rel)
			}
			slices.Sort(names)
			if want := distFiles(tc.system); !slices.Equal(names, want) {
				t.Errorf("%s holds\n%s\nwant\n%s", tc.archive, strings.Join(names, "\n"), strings.Join(want, "\n"))
			}
			bin := top + "bin/keyrelay"
			if tc.system == "windows" {
				bin = top + "keyrelay.exe"
			}
			if !tc.isBinary(files[bin]) {
				t.Errorf("%s: %s is not a %s binary for its processor", tc.archive, bin, tc.system)
			}
			if tc.system == "darwin" {
				for _, agent := range []string{"recv", "send"} {
					p := string(files[top+"share/keyrelay/launchd/com.github.keyrelay."+agent+".plist"])
					if !strings.Contains(p, "<string>/usr/local/bin/keyrelay</string>") {
						t.Errorf("the %s agent does not run /usr/local/bin/keyrelay:\n%s", agent, p)
					}
				}
			}
			st, _ := os.Stat(path)
			t.Logf("%s: %d bytes, %d files (%s: %d bytes)", tc.archive, st.Size(), len(files), bin, len(files[bin]))
		})
	}
}

// readArchive reads a .tar.gz or .zip: its regular files' contents by name.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		r, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, f := range r.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name] = b
		}
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "./")] = b
	}
}
