// Package wintest runs keyrelay's Windows parts under Wine on an Xvfb
// display, for the end-to-end tests (e2e/wine_test.go) and make wine-test:
// it builds the small Windows programs beside it (winwatch, a window that
// prints the key messages it receives; wincapture, the capture printing
// its events; wininject, the injector fed from a key script; winacl, which
// shows and changes ACLs where Wine's icacls is a stub), keyrelay.exe
// itself, internal/netio/udpsock's and secret's tests as udpsock.test.exe and
// secret.test.exe, and the ProcessPrng shim DLL that Go programs need
// under Wine 8 (shim/), and starts them. keyrelay.exe's sockets are
// internal/netio/udpsock's: Go's own UDP sockets fail under Wine 8 (WSAIoctl
// SIO_UDP_NETRESET, error 10045).
package wintest
