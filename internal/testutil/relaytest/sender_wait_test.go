package relaytest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/internal/testutil/relaytest"
	"github.com/keyrelay/keyrelay/netsim"
	"github.com/keyrelay/keyrelay/receiver"
	"github.com/keyrelay/keyrelay/sender"
)

// TestWaitPlaysOnceAnswered (send --wait): the source plays only once the
// receiver answered (a handshake response, or with --insecure an ack); a
// receiver that answers 3 s late within a 10 s wait gets every key, and
// one that never answers within the wait gets none: Run returns a
// NoAnswerError naming it, and the source never played.
func TestWaitPlaysOnceAnswered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		insecure bool
		late     time.Duration // the receiver is unreachable this long
		wait     time.Duration
		typed    bool
	}{
		{"handshaken, 3s late, wait 10s", false, 3 * time.Second, 10 * time.Second, true},
		{"insecure, 3s late, wait 10s", true, 3 * time.Second, 10 * time.Second, true},
		{"handshaken, never, wait 1s", false, time.Hour, time.Second, false},
		{"insecure, never, wait 1s", true, time.Hour, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nw := netsim.NewNetwork(netsim.Config{Delay: time.Millisecond})
				osk := &fake.OS{}
				cfg := relaytest.Config{Net: nw, Feedback: true, Insecure: tc.insecure,
					Receiver: receiver.Config{Injector: osk, Timeout: time.Second},
					Sender:   sender.Config{Wait: tc.wait}}
				if !tc.insecure {
					cfg.PSK = key
				}
				rl := relaytest.Start(t, cfg)
				nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, true)
				time.AfterFunc(tc.late, func() { nw.Partition(relaytest.SendAddr, relaytest.RecvAddr, false) })
				src := &fake.Trace{Steps: taps(10, 20*time.Millisecond)}
				start := time.Now()
				_, err := rl.Sender.Run(context.Background(), src)
				took := time.Since(start)
				time.Sleep(time.Second)
				rl.Stop()
				got := osk.SentDowns()
				var noAnswer *sender.NoAnswerError
				switch {
				case tc.typed && err != nil:
					t.Fatalf("Run: %v", err)
				case tc.typed && len(got) != 10:
					t.Errorf("typed %d key-downs, want 10", len(got))
				case tc.typed && src.Emitted()[0].Sub(start) < tc.late:
					t.Errorf("the source played %v after the start, before the receiver could answer (%v)", src.Emitted()[0].Sub(start), tc.late)
				case !tc.typed && !errors.As(err, &noAnswer):
					t.Fatalf("Run: %v, want a NoAnswerError", err)
				case !tc.typed && (!slices.Equal(noAnswer.Addrs, []string{relaytest.RecvAddr}) || took != tc.wait):
					t.Errorf("NoAnswerError %v after %v, want it naming %s after %v", noAnswer, took, relaytest.RecvAddr, tc.wait)
				case !tc.typed && (len(src.Emitted()) != 0 || len(got) != 0):
					t.Errorf("the source played %d events and %d were typed, want none", len(src.Emitted()), len(got))
				}
			})
		})
	}
}
