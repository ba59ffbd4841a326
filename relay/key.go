package relay

import (
	"errors"

	"github.com/keyrelay/keyrelay/identity"
	"github.com/keyrelay/keyrelay/internal/config"
	"github.com/keyrelay/keyrelay/secret"
)

// KeyOptions are the key settings send and recv share: --key-file and
// --insecure.
type KeyOptions struct {
	KeyFile  string
	Insecure bool
}

// load returns the key (nil with --insecure, or without a key file when
// none is required), telling the user its fingerprint or the risk they
// took. required: one-way use, whose packets are sealed with it
// (PROTOCOL.md §8.6); a handshake authenticates by the machines'
// identities, and mixes the key in when there is one (Noise psk2).
func (k *KeyOptions) load(logf func(string, ...any), required bool) ([]byte, error) {
	if k.Insecure {
		if k.KeyFile != "" {
			return nil, config.Involving(errors.New("--insecure and --key-file exclude each other"), "insecure", "key-file")
		}
		logf("WARNING: --insecure: keystrokes travel in plaintext and anyone who can reach this port can type into the receiver")
		return nil, nil
	}
	// $KEYRELAY_KEY_FILE and the config file have been applied to
	// k.KeyFile already (configure).
	path := k.KeyFile
	if path == "" && !required {
		return nil, nil
	}
	if path == "" {
		return nil, config.NoKeyError(config.DisplayDefaultPath())
	}
	key, err := secret.Load(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "key-file"}
	}
	logf("key file fingerprint %s (the other machine must show the same)", secret.Fingerprint(key))
	return key, nil
}

// loadIdentity loads this machine's identity from path, making it on
// first use (and saying so on stderr, as 'keyrelay id' does), and says its
// fingerprint: the other machines' peers files name it.
func loadIdentity(path string, logf func(string, ...any)) (*identity.Identity, error) {
	id, created, err := identity.LoadOrCreate(path)
	if err != nil {
		return nil, config.SettingError{Err: err, Setting: "identity"}
	}
	if created {
		logf("made a new identity at %s", path)
	}
	logf("identity %s", identity.Fingerprint(id.Public()))
	return id, nil
}
