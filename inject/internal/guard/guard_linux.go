package guard

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The descriptors a guard is started with, after standard error.
const (
	fdPipe = 3 // the read end of the pipe whose end is the guarded process's
	fdPage = 4 // the shared page (a memfd)
)

// stopWait bounds how long Stop waits for the guard to end: longer than an
// Action takes to undo anything, for a page that was not left empty.
const stopWait = 5 * time.Second

// Guard is the guarded process's side of a guard process.
//
// Page is the memory the guard reads when the process ends: the caller
// keeps there what the guard must undo, and clears it once undone. Writes
// to it are plain stores; the guard reads it only after the process has
// ended or called Stop. Page and Stop are for one goroutine at a time.
type Guard struct {
	Page []byte

	w    *os.File // the pipe's write end: closed by Stop or the process's end
	pid  int
	done chan struct{} // closed when the guard has ended
}

// pageName is the name of the page's memfd, which a guard finds on fdPage;
// processName the guard's name in ps (its argv[0], and its comm).
const (
	pageName    = "keyrelay-guard"
	processName = "keyrelay-guard"
)

// hasPage reports whether this process was started with a guard's page.
// (Not whether its parent is the process roleEnv names: that process may
// have ended before the guard got this far.)
func hasPage() bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fdPage))
	return err == nil && strings.HasPrefix(link, "/memfd:"+pageName+" ")
}

// Start starts a guard process of the given kind (a name in Serve's
// actions) with args, sharing a zeroed page with it.
func Start(kind string, args ...string) (*Guard, error) {
	if !serving.Load() {
		return nil, ErrUnavailable
	}
	mfd, err := unix.MemfdCreate(pageName, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("unable to make the guard's page: %w", err)
	}
	page := os.NewFile(uintptr(mfd), "keyrelay-guard page")
	defer page.Close() // the mapping and the guard's copy keep it
	if err := unix.Ftruncate(mfd, PageSize); err != nil {
		return nil, fmt.Errorf("unable to make the guard's page: %w", err)
	}
	mem, err := unix.Mmap(mfd, 0, PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("unable to map the guard's page: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("unable to make the guard's pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		// This very program, even if its file has been replaced since
		// (an upgrade while recv runs): the guard must be recv's.
		Path:       "/proc/self/exe",
		Args:       append([]string{processName, kind}, args...),
		Env:        append(os.Environ(), roleEnv+"="+strconv.Itoa(os.Getpid())),
		Stderr:     os.Stderr,
		ExtraFiles: []*os.File{r, page},
		// A session of its own: signals to recv's process group (the
		// terminal's Ctrl+C, kill -- -PGID) do not reach it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		unix.Munmap(mem)
		return nil, fmt.Errorf("unable to start the guard process: %w", err)
	}
	g := &Guard{Page: mem, w: w, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// PID is the guard process's ID.
func (g *Guard) PID() int { return g.pid }

// Stop ends the guard as the process's end would: it reads the page (left
// empty, it does nothing) and exits. Stop waits for that, up to stopWait,
// and unmaps the page, which must not be touched after. A second Stop does
// nothing.
func (g *Guard) Stop() error {
	if g.Page == nil {
		return nil // stopped already
	}
	g.w.Close()
	var err error
	select {
	case <-g.done:
	case <-time.After(stopWait):
		err = fmt.Errorf("the guard process %d did not end within %v of its pipe's end", g.pid, stopWait)
	}
	unix.Munmap(g.Page)
	g.Page = nil
	return err
}

// serve is a guard's life: it waits for the end of the guarded process
// (or its Stop), reads the page and runs act on it. It returns the exit
// status.
func serve(of int, kind string, act Action, args []string) int {
	// The signals that stop recv cleanly: recv then undoes everything
	// itself, and its end ends the guard.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// Its name for ps and top, which would say "exe" (the path it was
	// started by): the main thread's, which /proc/self names.
	os.WriteFile("/proc/self/comm", []byte(processName), 0)
	pipe := os.NewFile(fdPipe, "keyrelay-guard pipe")
	mem := os.NewFile(fdPage, "keyrelay-guard page")
	if pipe == nil || mem == nil {
		fmt.Fprintf(os.Stderr, "keyrelay guard: started without its pipe and page\n")
		return 2
	}
	undo := act(args)
	// Nothing is ever written: a read returns at the end, as EOF.
	var b [1]byte
	for {
		if _, err := pipe.Read(b[:]); err != nil {
			break
		}
	}
	page := make([]byte, PageSize)
	if _, err := mem.ReadAt(page, 0); err != nil {
		fmt.Fprintf(os.Stderr, "keyrelay guard: reading what process %d left: %v\n", of, err)
		return 1
	}
	did, err := undo(page)
	if did != "" {
		fmt.Fprintf(os.Stderr, "keyrelay: recv (process %d) ended without releasing its keys: %s\n", of, did)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "keyrelay: recv (process %d) ended without releasing its keys, and its guard could not release them (%s): %v\n", of, kind, err)
		return 1
	}
	return 0
}
