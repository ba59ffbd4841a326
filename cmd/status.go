package cmd

import (
	"fmt"
	"strings"

	"github.com/keyrelay/keyrelay/keys"
)

// heldText says how many keys h holds down ("holds 2 keys"); with
// debug (--debug) it names them too. Without, no status line names a
// key: the keys of a password typed would be on the screen and in the
// logs.
func heldText(h []keys.Key, debug bool) string {
	var s string
	switch len(h) {
	case 0:
		return "holds no key"
	case 1:
		s = "holds 1 key"
	default:
		s = fmt.Sprintf("holds %d keys", len(h))
	}
	if debug {
		s += " (" + keyNames(h) + ")"
	}
	return s
}

// heldAttrs are heldText's structured fields: held, the count, always;
// held_keys, the names, only with debug.
func heldAttrs(h []keys.Key, debug bool) []any {
	a := []any{"held", len(h)}
	if debug {
		a = append(a, "held_keys", keyNames(h))
	}
	return a
}

// keyNames joins key names with "+".
func keyNames(h []keys.Key) string {
	s := make([]string, len(h))
	for i, c := range h {
		s[i] = c.String()
	}
	return strings.Join(s, "+")
}

// debugNote is what --debug says once at start.
const debugNote = "debug: key names appear in the log, passwords typed included"
