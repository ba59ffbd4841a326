package guard

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// PageSize is the size of the page a guarded process and its guard share.
const PageSize = 4096

// roleEnv, in a guard's environment, is the process ID of the process that
// started it. A program finding it is a guard only if it also has the
// guard's page (hasPage): a stray setting (inherited, typed) is ignored.
const roleEnv = "KEYRELAY_GUARD_OF"

// Action readies a guard, as it starts, to undo what the guarded process
// may leave, given the arguments Start was given: it opens in advance what
// the undoing needs (so that, at the end, nothing waits on a connection
// made then), and returns the Undo.
type Action func(args []string) Undo

// Undo undoes what the guarded process left in page when it ended. It
// says what it did, "" for nothing (a page left empty by a clean exit),
// and bounds its own time: the guard ends when it returns.
type Undo func(page []byte) (did string, err error)

// ErrUnavailable is Start's error in a program that did not call Serve
// (or where guards cannot run).
var ErrUnavailable = errors.New("no guard process can be started here")

// serving is set by Serve in a program that can start guards.
var serving atomic.Bool

// Serve runs this process as the guard it was started as, and exits; in a
// process that is no guard it enables Start and returns. actions are the
// guards there are, by the name Start is given. Call it first in main,
// before anything else opens files or starts goroutines of its own.
func Serve(actions map[string]Action) {
	of, kind, args, ok := role()
	if !ok {
		serving.Store(true)
		return
	}
	os.Unsetenv(roleEnv)
	act, found := actions[kind]
	if !found {
		fmt.Fprintf(os.Stderr, "keyrelay guard: no guard %q in this program\n", kind)
		os.Exit(2)
	}
	os.Exit(serve(of, kind, act, args))
}

// role reads this process's guard role from its environment and
// arguments: [program, kind, args...].
func role() (of int, kind string, args []string, ok bool) {
	v := os.Getenv(roleEnv)
	if v == "" || len(os.Args) < 2 {
		return 0, "", nil, false
	}
	of, err := strconv.Atoi(v)
	if err != nil || !hasPage() {
		return 0, "", nil, false
	}
	return of, os.Args[1], os.Args[2:], true
}
