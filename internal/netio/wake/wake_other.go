//go:build !linux

package wake

import "time"

type timerfd struct{}

// New says ErrUnsupported: only Linux has a timerfd.
func New() (*Timer, error) { return nil, ErrUnsupported }

// OnFire, Reset, Stop and Close are never called: New makes no Timer here.
func (t *Timer) OnFire(func())       {}
func (t *Timer) Reset(time.Duration) {}
func (t *Timer) Stop()               {}
func (t *Timer) Close() error        { return nil }
