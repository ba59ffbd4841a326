// Package controltest is a running send's side of the control socket for
// tests: a control.Handler that switches the moment it is asked.
package controltest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/routing"
)

// Send answers keyrelay switch and status as a send whose destinations
// are Names ("a" when none), each live on 127.0.0.1:1, or Dests as given.
// A switch to one of the names or to "local" makes it the target, unless
// Cannot: its source cannot switch. Safe for concurrent use once made.
type Send struct {
	Names  []string
	Dests  []control.DestStatus // if set, what Status says of the destinations
	Cannot bool

	mu     sync.Mutex
	target string
}

// New is a Send whose target is target.
func New(target string, names ...string) *Send {
	return &Send{Names: names, target: target}
}

func (f *Send) names() []string {
	if len(f.Names) == 0 {
		return []string{"a"}
	}
	return f.Names
}

// Switch makes name the target.
func (f *Send) Switch(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "local" && !slices.Contains(f.names(), name) {
		return fmt.Errorf("%w %q", routing.ErrNoSuchDestination, name)
	}
	if f.Cannot {
		return fmt.Errorf("%w: --input script plays a script", control.ErrCannotSwitch)
	}
	f.target = name
	return nil
}

// Status is the target and the destinations.
func (f *Send) Status() control.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	ans := control.Answer{Target: f.target, CanSwitch: !f.Cannot, Dests: f.Dests}
	if f.Dests == nil {
		for _, n := range f.names() {
			ans.Dests = append(ans.Dests, control.DestStatus{Name: n, Addr: "127.0.0.1:1", State: "live", Live: true})
		}
	}
	return ans
}

// Target is the target now.
func (f *Send) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.target
}

var _ control.Handler = (*Send)(nil)
