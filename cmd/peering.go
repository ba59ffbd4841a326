package cmd

import (
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/peers"
	"github.com/keyrelay/keyrelay/sender"
)

// loadPeersAt loads the peers file at path (a missing one is empty).
func loadPeersAt(path string) (*peers.List, error) {
	l, err := peers.Load(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "peers"}
	}
	return l, nil
}

// unansweredAddrs lists the destinations whose handshake has no answer.
func unansweredAddrs(s *sender.Sender) []string {
	var out []string
	for _, u := range s.Unanswered() {
		out = append(out, u.Addr)
	}
	return out
}

// handshakeWhy is what the handshake with addr waits on ("" if nothing).
func handshakeWhy(s *sender.Sender, addr string) string {
	for _, u := range s.Unanswered() {
		if u.Addr == addr {
			return u.Handshake
		}
	}
	return ""
}
