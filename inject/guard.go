package inject

import (
	"errors"

	"github.com/keyrelay/keyrelay/inject/internal/guard"
)

// guards are the injectors' guard processes (inject/internal/guard), by kind:
// what each does when recv ends without releasing what it holds.
var guards = map[string]guard.Action{
	"x11":  releaseX11,
	"hidg": emptyHidgReport,
}

// ServeGuard runs this process as an injector's guard when it was started
// as one, and exits; otherwise it lets the injectors start their guards.
// The program's main calls it first (cmd.Execute).
func ServeGuard() { guard.Serve(guards) }

// startGuard starts the guard of kind with args and returns it with the
// page recv keeps its state in (the first size bytes of the guard's), or
// nil and memory of recv's own when no guard can run: in a program that
// did not call ServeGuard (a test binary) or on another system, silently;
// when starting it failed, saying so, as a recv killed holding a key then
// leaves it held.
func startGuard(kind string, size int, logf func(string, ...any), args ...string) (*guard.Guard, []byte) {
	g, err := guard.Start(kind, args...)
	if err != nil {
		if !errors.Is(err, guard.ErrUnavailable) && logf != nil {
			logf("%v: should recv be killed (SIGKILL, the OOM killer, a crash) while it holds a key, nothing releases it", err)
		}
		return nil, make([]byte, size)
	}
	return g, g.Page[:size]
}

// stopGuard ends g after a clean close, which left its page empty, or
// everything in it already undone.
func stopGuard(g *guard.Guard, logf func(string, ...any)) {
	if g == nil {
		return
	}
	if err := g.Stop(); err != nil && logf != nil {
		logf("%v", err)
	}
}
