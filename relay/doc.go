// Package relay runs keyrelay's two ends as the commands start them: recv
// (Recv: a socket, the injector --inject chooses, a receiver.Receiver
// typing what the senders it accepts send) and their shared settings
// (KeyOptions, the identity), checked as the commands check them, with
// usage errors that name the setting (internal/config). While an end runs
// it shows its status lines and logs through internal/statusboard; what
// it leaves at the end is its caller's to say.
package relay
