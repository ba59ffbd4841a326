// Package relay runs keyrelay's two ends as the commands start them, with
// their settings checked as the commands check them (usage errors that
// name the setting, internal/config):
//
//   - Send (SendOptions): a key source (capture) to its destinations
//     (internal/dest), through one sender.Sender for every destination or
//     a routing.Group routing keys per destination, with the control socket
//     (package control) open for keyrelay switch and status. It returns
//     what each Sender delivered: the summary and the verdict are its
//     caller's to say.
//   - Recv (RecvOptions): a socket, the injector --inject chooses (inject's
//     table), and a receiver.Receiver typing what the senders it accepts
//     send.
//
// While an end runs it shows its status lines and logs through
// internal/statusboard.
package relay
