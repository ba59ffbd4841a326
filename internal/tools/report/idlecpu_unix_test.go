//go:build unix

package report

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
)

// idleCPU measures this process's CPU time while a sender and a receiver
// idle on loopback for d.
func idleCPU(t *testing.T, d time.Duration) float64 {
	rl := loopback(t, fake.Nop{})
	sdone := make(chan struct{})
	sctx, scancel := context.WithCancel(context.Background())
	go func() { rl.Sender.Run(sctx, make(fake.Chan)); close(sdone) }()
	time.Sleep(500 * time.Millisecond) // settle
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	time.Sleep(d)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	wall := time.Since(start)
	scancel()
	<-sdone
	rl.Stop()
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	return 100 * float64(cpu) / float64(wall)
}
