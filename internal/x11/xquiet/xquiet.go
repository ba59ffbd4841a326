// Package xquiet silences github.com/jezek/xgb's logger, once per process.
//
// xgb logs to standard error when it connects without an Xauthority file,
// which is normal (Xvfb, xhost), and keyrelay's own errors say what matters.
// The logger is a package variable that xgb's reader goroutines read, so it
// is set once, before the first connection, and never again: setting it per
// connection would race with the goroutines of earlier ones.
package xquiet

import (
	"io"
	"log"
	"sync"

	"github.com/jezek/xgb"
)

var once sync.Once

// Quiet silences xgb's logger; call it before connecting.
func Quiet() {
	once.Do(func() { xgb.Logger = log.New(io.Discard, "", 0) })
}
