// Package eventqueue implements the balanced event queue of Ian Henderson's
// "sending balanced events over a lossy channel" (the seed): the sender keeps a
// fixed-length queue of its newest key events in which a key-down stays until
// its key is released, and sends the whole queue in every packet; the receiver
// diffs each incoming queue against the previous one, so a lost packet costs
// nothing once a later one arrives and no key can stay stuck down.
//
// Queue.Add is the seed's sender steps 1–7 and Diff the receiver steps 1–7,
// line for line; the step numbers appear in the code. Rebuilder makes the
// whole queue of a packet that carries only the events newer than what its
// receiver acknowledged (PROTOCOL.md §3.3) by replaying Add: the model
// stays the fixed-length queue. The package is pure: no
// clocks, I/O, goroutines or globals. Time reaches it only as event stamps.
//
// # Choices the seed leaves open
//
// Stamps. A stamp is the sender's session clock in milliseconds (0 at session
// start), raised to one more than the queue's newest stamp when the clock has
// not moved on (Queue.NextStamp), so stamps strictly increase within a session
// and no two events tie. A fresh queue holds None events stamped 0, "in the
// past": real events are stamped 1 or later. Add rejects a stamp that is not
// newer than the queue's newest (ErrStamp), so the receiver's "timestamp greater
// than the previous timestamp" test is exact.
//
// Before the seed's steps, Add filters two events that would only waste queue
// slots: a key-down for a key the queue already holds (OS auto-repeat, Repeat)
// and a key-up for a key it does not hold (Unheld). "Held" means the key's
// newest event in the queue is a key-down; a key-down dropped for want of room
// (Dropped, the seed's step 5) is not held, so a repeat of it tries again.
//
// Step 6 of the sender "shifts the event at i to i+1 for each i from 0 to the
// last shift index - 1": read as a shift of the whole range (a memmove), not a
// sequence of in-place copies, which would smear event 0 over the range.
//
// Step 5 of the receiver releases keys in the order they were pressed (oldest
// first) so the output is deterministic.
//
// Balanced dispatch. The seed notes that step 6 may dispatch a key-down for a
// key that is already held, and that a receiver wanting "truly balanced"
// events can either skip it or generate the key-up it missed. With balanced on
// (the default of `keyrelay recv`), Diff generates the missing key-up (cause
// Missing) right before such a key-down, so the press still registers: a
// balanced sender (as keyrelay's is) only repeats a key-down after a key-up
// that fell out of the queue, so the key-up did happen. With balanced off,
// Diff follows the seed literally and dispatches the repeated key-down.
//
// # Sessions that start late or come back
//
// The seed's receiver starts from a queue of None events in the past, which
// would re-type up to N old events when a receiver joins a sender that has been
// running for a while (a restarted receiver, or one that timed a sender out).
// Resume covers those cases: it presses the keys the incoming queue holds from
// before a given stamp (cause Resync), then dispatches the newer events as the
// seed's step 6 does. Resume with since 0 is exactly Diff against a fresh
// queue. Tracker chooses between them for one session.
package eventqueue
