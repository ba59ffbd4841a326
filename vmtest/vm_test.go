//go:build vmtest

package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// guestEnv is set in the VM: TestGuest runs there, TestVM does not.
const guestEnv = "KEYRELAY_VMTEST_GUEST"

// checks are TestGuest's subtests, in the order they run: each is reported
// as a subtest of TestVM.
var checks = append([]string{"events", "grab", "keys", "hotkey", "sigterm", "sigkill", "repeat", "leds", "locks", "local-keys", "idle", "layout", "recv-sigkill"}, hidgChecks...)

// xkbData are the files recv --layout reads (xkb-data, libx11-data),
// copied into the guest at the same paths.
var xkbData = []string{"/usr/share/X11/xkb/symbols", "/usr/share/X11/xkb/keycodes", "/usr/share/X11/locale/en_US.UTF-8/Compose"}

// vmTimeout bounds the whole boot, tests and power-off: a guest that hangs
// is killed (by PID, through exec.CommandContext) rather than hanging make.
const vmTimeout = 200 * time.Second

// doneMarker is what the init script prints after the guest tests, with
// their exit status: without it the VM died or hung before the end.
const doneMarker = "vmtest: guest exit status "

// vm is what booting the guest needs from this machine.
type vm struct {
	qemu, kernel, busybox string
	modules               []string // .ko files (maybe compressed) to insmod, in order
}

// missing skips the test, or fails it in CI (CI=true), where the tools are
// installed by .ci/run and their absence is a broken set-up, not a
// developer machine without QEMU.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (apt-get install qemu-system-x86 linux-image-amd64 busybox-static)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// findVM finds QEMU, a kernel with its evdev and uinput modules, and a
// static busybox, or skips (fails in CI) naming what is missing.
func findVM(t *testing.T) vm {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		missing(t, "vmtest boots an x86-64 Linux kernel: needs a linux/amd64 host, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	var v vm
	var err error
	if v.qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		missing(t, "no qemu-system-x86_64")
	}
	if v.busybox, err = exec.LookPath("busybox"); err != nil {
		missing(t, "no busybox")
	}
	if f, err := elf.Open(v.busybox); err != nil {
		missing(t, "cannot read %s: %v", v.busybox, err)
	} else {
		dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if dynamic {
			missing(t, "%s is linked dynamically: the initramfs has no C library, it needs busybox-static", v.busybox)
		}
	}
	// The running kernel's image if it is installed (a developer's
	// machine), else the newest one (a container, whose running kernel is
	// the host's).
	kernels, _ := filepath.Glob("/boot/vmlinuz-*")
	if len(kernels) == 0 {
		missing(t, "no kernel in /boot")
	}
	v.kernel = kernels[len(kernels)-1]
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		if k := "/boot/vmlinuz-" + strings.TrimSpace(string(out)); slices.Contains(kernels, k) {
			v.kernel = k
		}
	}
	if f, err := os.Open(v.kernel); err != nil {
		missing(t, "cannot read the kernel: %v", err)
	} else {
		f.Close()
	}
	release := strings.TrimPrefix(filepath.Base(v.kernel), "vmlinuz-")
	mods := filepath.Join("/lib/modules", release)
	builtin, _ := os.ReadFile(filepath.Join(mods, "modules.builtin"))
	// The USB modules make one kernel a USB keyboard gadget (dummy_hcd's
	// controller, libcomposite, usb_f_hid) and its own USB host (usbhid),
	// in the order they depend on each other.
	for _, m := range []string{
		"kernel/drivers/input/evdev.ko", "kernel/drivers/input/misc/uinput.ko",
		"kernel/drivers/usb/common/usb-common.ko", "kernel/drivers/usb/core/usbcore.ko",
		"kernel/drivers/usb/gadget/udc/udc-core.ko", "kernel/drivers/usb/gadget/udc/dummy_hcd.ko",
		"kernel/fs/configfs/configfs.ko", "kernel/drivers/usb/gadget/libcomposite.ko",
		"kernel/drivers/usb/gadget/function/usb_f_hid.ko", "kernel/drivers/hid/hid.ko",
		"kernel/drivers/hid/usbhid/usbhid.ko", "kernel/drivers/hid/hid-generic.ko",
	} {
		if bytes.Contains(builtin, []byte(m+"\n")) {
			continue // built into the kernel: nothing to load
		}
		found, _ := filepath.Glob(filepath.Join(mods, m) + "*")
		if len(found) == 0 {
			missing(t, "%s has no %s", mods, filepath.Base(m))
		}
		v.modules = append(v.modules, found[0])
	}
	return v
}

// decompressors read the compressed modules some kernels ship (Debian's
// 6.1 has plain .ko; later ones compress them): busybox's insmod may not.
var decompressors = map[string][]string{".xz": {"xz", "-dc"}, ".zst": {"zstd", "-dc"}, ".gz": {"gzip", "-dc"}}

func readModule(t *testing.T, path string) (name string, data []byte) {
	t.Helper()
	ext := filepath.Ext(path)
	if ext == ".ko" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(path), data
	}
	d, ok := decompressors[ext]
	if !ok {
		t.Fatalf("module %s: unknown compression", path)
	}
	if _, err := exec.LookPath(d[0]); err != nil {
		missing(t, "module %s is compressed and there is no %s to read it", path, d[0])
	}
	data, err := exec.Command(d[0], append(d[1:], path)...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", d[0], path, err)
	}
	return strings.TrimSuffix(filepath.Base(path), ext), data
}

// initScript is the guest's PID 1: the file systems, the modules,
// loopback, then the guest tests; it prints doneMarker and powers off
// (-no-reboot makes QEMU exit on the reboot).
func initScript(modules []string) string {
	var s strings.Builder
	s.WriteString(`#!/bin/busybox sh
export PATH=/bin HOME=/ ` + guestEnv + `=1
busybox mount -t proc proc /proc
busybox mount -t sysfs sys /sys
busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
`)
	for _, m := range modules {
		fmt.Fprintf(&s, "busybox insmod /lib/%s || echo 'vmtest: insmod %s failed'\n", m, m)
	}
	s.WriteString(`busybox mount -t configfs none /sys/kernel/config || echo 'vmtest: no configfs'
busybox ip link set lo up
/bin/vmtest.test -test.run '^TestGuest$' -test.v -test.count 1 -test.timeout 180s
echo "` + doneMarker + `$?"
busybox reboot -f
`)
	return s.String()
}

// buildInitramfs builds keyrelay and this package's test binary (static:
// the initramfs has no C library) and packs them into an initramfs.
func buildInitramfs(t *testing.T, v vm) string {
	t.Helper()
	dir := t.TempDir()
	bin, guest := filepath.Join(dir, "keyrelay"), filepath.Join(dir, "vmtest.test")
	for _, args := range [][]string{
		{"build", "-o", bin, ".."},
		{"test", "-c", "-tags", "vmtest", "-o", guest, "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var buf bytes.Buffer
	c := &cpioWriter{w: &buf}
	for _, d := range []string{"bin", "dev", "lib", "proc", "sys", "tmp"} {
		c.dir(d)
	}
	// The kernel opens /dev/console for init before devtmpfs is mounted.
	c.entry("dev/console", 0o600, cpioChar, nil, 5, 1)
	var names []string
	for _, m := range v.modules {
		name, data := readModule(t, m)
		c.file("lib/"+name, 0o644, data)
		names = append(names, name)
	}
	c.file("init", 0o755, []byte(initScript(names)))
	for _, f := range []struct{ path, name string }{{v.busybox, "bin/busybox"}, {bin, "bin/keyrelay"}, {guest, "bin/vmtest.test"}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		c.file(f.name, 0o755, data)
	}
	packXKB(t, c)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initramfs.cpio")
	if err := os.WriteFile(initrd, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return initrd
}

// packXKB copies xkbData into the initramfs, with the directories above.
func packXKB(t *testing.T, c *cpioWriter) {
	t.Helper()
	made := map[string]bool{}
	mkdirs := func(dir string) {
		var path string
		for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
			path = filepath.Join(path, part)
			if !made[path] {
				made[path] = true
				c.dir(path)
			}
		}
	}
	for _, root := range xkbData {
		if _, err := os.Stat(root); err != nil {
			missing(t, "no %s for recv --layout (apt-get install xkb-data libx11-data)", root)
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p) // through a symlink too
			if err != nil {
				return err
			}
			mkdirs(filepath.Dir(p))
			c.file(strings.TrimPrefix(p, "/"), 0o644, data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// boot runs the guest to the end and returns its console output.
func boot(t *testing.T, v vm, initrd string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	// Software emulation (tcg): KVM is often missing or, nested in a CI
	// VM, broken. The guest gets two CPUs, for keyrelay's goroutines, and
	// no network card: its loopback is all the test uses.
	cmd := exec.CommandContext(ctx, v.qemu, "-accel", "tcg", "-smp", "2", "-m", "512",
		"-nographic", "-nic", "none", "-no-reboot", "-kernel", v.kernel, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	err = cmd.Wait()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Errorf("the VM did not finish within %v: killed\n%s", vmTimeout, strings.Join(lines, "\n"))
	case err != nil:
		t.Errorf("qemu: %v\n%s", err, stderr.String())
	}
	t.Logf("VM ran %v (%s, %s)", time.Since(start).Round(100*time.Millisecond), filepath.Base(v.kernel), strings.Join(v.modules, ", "))
	return lines
}

var resultRE = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): TestGuest/(\S+) \(`)

// TestVM boots the guest and reports each of its checks as a subtest,
// failing with the guest's own output for that check: uinput, evdev and the
// gadget proven on a real kernel.
func TestVM(t *testing.T) {
	if os.Getenv(guestEnv) != "" {
		t.Skip("in the guest: TestGuest runs here")
	}
	v := findVM(t)
	lines := boot(t, v, buildInitramfs(t, v))

	// Each check's output (go test -v streams it) runs from its "=== RUN"
	// line to the next line go test writes itself; the guest's subtests
	// run one after the other. Their results come when TestGuest ends.
	results, output := map[string]string{}, map[string][]string{}
	var current string
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
			current = ""
		}
		if name, ok := strings.CutPrefix(trimmed, "=== RUN   TestGuest/"); ok {
			current = name
			continue
		}
		if current != "" {
			output[current] = append(output[current], l)
		}
		if m := resultRE.FindStringSubmatch(l); m != nil {
			results[m[2]] = m[1]
		}
	}
	status := "none"
	for _, l := range lines {
		if st, ok := strings.CutPrefix(l, doneMarker); ok {
			status = st
		}
	}
	passed := 0
	for _, name := range checks {
		if results[name] == "PASS" {
			passed++
		}
	}
	switch {
	case len(results) < len(checks):
		t.Errorf("the guest did not run every check (exit status %s); its console:\n%s", status, strings.Join(lines, "\n"))
	case passed == len(checks) && status != "0":
		// Every check passed but something around them failed (recv's
		// exit, say), or the guest never said how it ended.
		t.Errorf("the guest's checks passed but it ended with status %s; its console:\n%s", status, strings.Join(lines, "\n"))
	}
	for _, name := range checks {
		t.Run(name, func(t *testing.T) {
			switch results[name] {
			case "PASS":
				if len(output[name]) > 0 {
					t.Log(strings.Join(output[name], "\n"))
				}
			case "":
				t.Errorf("no result from the guest (its console is above)")
			default:
				t.Errorf("%s in the guest:\n%s", results[name], strings.Join(output[name], "\n"))
			}
		})
	}
}
