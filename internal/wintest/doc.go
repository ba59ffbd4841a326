// Package wintest runs keyrelay's Windows capture and injector under Wine
// on an Xvfb display, for the end-to-end tests (e2e/wine_test.go) and make
// wine-test: it builds the three small Windows programs beside it
// (winwatch, a window that prints the key messages it receives;
// wincapture, the capture printing its events; wininject, the injector
// fed from a key script) and the ProcessPrng shim DLL that Go programs
// need under Wine 8 (shim/), and starts them. No sockets: UDP fails under
// Wine 8 for Go >= 1.23 (WSAIoctl SIO_UDP_NETRESET, error 10045), so a
// whole relay between Wine processes is not run here.
package wintest
