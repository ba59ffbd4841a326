package handshake

import (
	"testing"
	"time"
)

// TestForwardSecrecy (PROTOCOL.md §8.3; protocol 4 derived every key from
// the key file and values sent in clear): an attacker who recorded a
// session and later stole both machines' static private keys and the
// key file runs the responder again on the recorded initiation, as the
// receiver did. It gets a keypair (the initiation is genuine), but not the
// session's: the responder's ephemeral key, gone with the handshake, is
// drawn anew, so the recorded queue packets and acks do not open, in
// either direction, under any key it can make from the recording.
func TestForwardSecrecy(t *testing.T) {
	sPriv, rPriv, psk := key(0x10), key(0x40), key(0x80)
	senderPub := PublicKey(sPriv)
	paired := func(pub [32]byte) bool { return pub == senderPub }
	init := NewInitiator(InitiatorConfig{Private: sPriv, Peer: PublicKey(rPriv), PSK: psk, Random: seeded(1)})
	resp := NewResponder(ResponderConfig{Private: rPriv, PSK: psk, Random: seeded(2), Paired: paired})
	b, err := init.Initiate(nil, 0x77, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	recInit, _ := ParseInitiation(b)
	a, err := resp.ConsumeInitiation(nil, recInit, src, false, t0)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ParseResponse(a.Packet)
	ks, err := init.ConsumeResponse(r, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The recording: a queue packet and an ack.
	q, err := ks.Seal(nil, Header{Type: TypeQueue, Session: 0x77, Counter: 2}, []byte("typed: hunter2"), t0)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := a.Keypair.Seal(nil, Header{Type: TypeAck, Session: 0x77, Counter: 1}, []byte("ack"), t0)
	if err != nil {
		t.Fatal(err)
	}
	recQ, _ := ParseTransport(q)
	recAck, _ := ParseTransport(ack)
	// The genuine keys open them (the recording is of a working session).
	if _, err := a.Keypair.Open(nil, recQ, t0); err != nil {
		t.Fatalf("the receiver's own keypair does not open the queue packet: %v", err)
	}

	// Later, with everything static stolen: the responder again, on the
	// recorded initiation, with fresh randomness (the old is gone).
	later := t0.Add(time.Minute)
	for seed := byte(3); seed < 8; seed++ {
		thief := NewResponder(ResponderConfig{Private: rPriv, PSK: psk, Random: seeded(seed), Paired: paired})
		ta, err := thief.ConsumeInitiation(nil, recInit, src, false, later)
		if err != nil {
			t.Fatalf("the stolen responder refused the recorded initiation: %v", err)
		}
		k := ta.Keypair
		k.Local = recQ.Index // as if it had drawn the recorded index
		k.Created = later
		if _, err := k.Open(nil, recQ, later); err == nil {
			t.Fatalf("seed %d: the recorded queue packet opened under keys made from static keys and the recording", seed)
		}
		// And the other direction: the thief's sealing key is not the
		// receiver's either (its acks differ byte for byte).
		forged, err := k.Seal(nil, Header{Type: TypeAck, Session: 0x77, Counter: 1}, []byte("ack"), later)
		if err != nil {
			t.Fatal(err)
		}
		if string(mustTransport(t, forged).sealed()) == string(recAck.sealed()) {
			t.Fatalf("seed %d: the thief's keypair seals the recorded ack byte for byte", seed)
		}
	}
}
