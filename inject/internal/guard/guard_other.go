//go:build !linux

package guard

import (
	"fmt"
	"os"
)

// Guard is Linux only.
type Guard struct{ Page []byte }

// Start reports that guards run on Linux only.
func Start(string, ...string) (*Guard, error) { return nil, ErrUnavailable }

// PID is 0: there is no guard process.
func (*Guard) PID() int { return 0 }

// Stop does nothing.
func (*Guard) Stop() error { return nil }

func hasPage() bool { return false }

func serve(of int, kind string, _ Action, _ []string) int {
	fmt.Fprintf(os.Stderr, "keyrelay guard: guards run on Linux only (%s for process %d)\n", kind, of)
	return 2
}
