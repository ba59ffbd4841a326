// Package doctor checks what this machine needs to send or receive keys:
// the settings send and recv will run with, the key, the identity and
// the peers file, what the injector and the key source need here (their
// entries' checks: inject.Backends, capture.Sources), recv's UDP port,
// and a round trip to each of send's destinations, resolved as send
// resolves them. Run returns the checks; `keyrelay doctor` prints them.
package doctor
