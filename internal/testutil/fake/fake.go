// Package fake holds the test doubles keyrelay's tests share, one of each
// kind: sources for sender.Source (Func, Chan, Trace, Taps) and injectors
// for receiver.Injector (Nop, Recorder, OS, CannotType, Watched). Package
// relaytest runs a real sender and receiver with them.
//
// It imports neither sender nor receiver, so those packages' own
// (in-package) tests use it too. Everything here waits on channels and
// timers only and reads the clock only through time.Now, so it runs in
// testing/synctest bubbles, in virtual time. Only tests import it.
package fake
