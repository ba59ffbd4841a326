// Package pair pairs two machines without copying a secret: each learns the
// other's name, static X25519 public key and recv port, and a person
// confirms the exchange by comparing a 6-digit code both screens show (as
// Bluetooth's numeric comparison and ZRTP's short authentication string).
// It takes and returns plain Info values; storing them is the caller's.
//
// B runs `keyrelay pair` (Listen, UDP port 7575 by default: recv's, so a
// firewall opened for keyrelay lets pairing through); A runs `keyrelay pair
// B[:PORT]` (Dial). Five steps, each a UDP datagram, big-endian:
//
//	step  from    name     body                                    length
//	1     A → B   hello    A's Info                                152 bytes
//	2     B → A   commit   B's Info, Cb                            152 bytes
//	3     A → B   nonce    Na                                       54 bytes
//	4     B → A   reveal   Nb                                       54 bytes
//	5     A ↔ B   confirm  the person's answer, what it has heard,  40 bytes
//	                       a MAC
//
// Every message starts with the same 22 bytes:
//
//	 0      2     3     4     5      6                                   22
//	+------+-----+-----+-----+------+-----------------------------------+------
//	|magic |ver  |type |step |rsvd  | pairing id: 16 random bytes,      | body
//	|"KR"  | 5   | 7   |1..5 | 0    | chosen by A                       |
//	+------+-----+-----+-----+------+-----------------------------------+------
//
// The first six bytes are laid out as every keyrelay header (PROTOCOL.md
// §2), so the pairing id sits at bytes 6–21, which a recv of another
// version echoes in its version notice (PROTOCOL.md §10): a hello sent to
// a recv instead of `keyrelay pair` is answered, and named (ErrRecv).
//
// An Info is 98 bytes, of fixed length so that the hashes below need no
// separators:
//
//	key   32 bytes  X25519 public key, not all zero
//	port  u16       where its recv listens
//	len   u8        name length, 1..63
//	name  63 bytes  UTF-8, printable, no spaces (CheckName); zeros after len
//
// Bodies: hello is A's Info and 32 zero bytes (so that it is as large as
// the commit answering it: a forged source address gains no amplification;
// no answer is larger than its question, but for the confirm that ends a
// side, sent twice to a peer that has come through steps 1-4); commit is B's
// Info and Cb (32 bytes); nonce is Na and reveal Nb (32 bytes each);
// confirm is answer (u8: 1 yes, 2 no), have (u8: 0 has not heard the
// other side's answer, 1 has it, 2 has it and knows the other side has
// ours) and a 16-byte MAC (below). Parse is strict: anything else (another length, non-zero padding
// or reserved byte, an unknown value) is an error and the datagram is
// ignored.
//
// The hashes, with id the pairing id and infos as encoded above:
//
//	Cb   = SHA-256("keyrelay pair commit v1" || id || A.info || B.info || Nb)
//	code = SHA-256("keyrelay pair code v1" || id || A.info || B.info || Na || Nb)
//
// the code being its first 8 bytes mod 10^6, as 6 decimal digits (Code).
// Each confirm carries
//
//	key  = SHA-256("keyrelay pair confirm v1" || shared || id || A.info || B.info || Na || Nb)
//	MAC  = HMAC-SHA256(key, side || id || answer || have), its first 16 bytes
//
// where shared is the X25519 of the sender's identity private key and the
// other side's public key (the same at both ends: static-static
// Diffie-Hellman), and side is "A" or "B", whoever says it (ConfirmKey,
// ConfirmMAC). A yes counts only with the other side's MAC: what the path
// sees (id, infos, nonces) does not give the key, so a forwarder cannot
// turn a no into a yes, nor make a yes of its own, and a confirm of one
// exchange is none of another. A no is taken with or without it: it can
// only stop the pairing, as dropping datagrams can, and a side that caught
// a changed exchange (ErrCommitment) shares no key with the other.
//
// Why a man in the middle wins with probability 10^-6 per attempt: to read
// the traffic later it must give A a key of its own for B and B one for A,
// so it runs two pairings, one with each, and wins only if their codes
// match. In the pairing where it plays B it must send Cb, binding its Nb',
// before A sends Na; A's Na is then fresh randomness it cannot influence,
// so that code is uniform. In the pairing where it plays A it must send Na'
// before B reveals Nb, which B committed to (and drew) before; that code
// too is uniform whatever it chooses. Whichever pairing it completes first,
// the other's code is drawn after its last choice, independently: the two
// match with probability 10^-6 (hash collisions and the 5·10^-14 bias of
// the mod aside). Without the commitment, B could pick Nb after seeing Na
// and search for a matching code; without Na after Cb, A could. Changing
// bytes in flight instead of running two pairings fails at A's check of Nb
// against Cb (ErrCommitment), since Cb covers both infos. A failed attempt
// is seen: the person at each end sees a code that differs and says no. The
// code covers names and ports too, so what the screens show and what is
// stored is what was compared.
//
// Reliability: A resends hello and nonce, and both sides their confirm,
// with backoff (Options.RetryMin doubling to RetryMax, 200 ms to 1 s) until
// answered; B answers duplicates with the same bytes (a second, different
// Na for the same pairing is ignored, as revealing Nb twice would let A
// choose among codes). The first hello (with Options.Accept, the first
// from an address it accepts) takes the listener: datagrams for
// another pairing id, from another address, or malformed are ignored and
// counted (Stats). A side ends once it has both answers and the other side
// has said it has its own (have ≥ 1; its last confirm, have 2, goes twice),
// or Linger after it knew both; a "no"
// on either side ends both with ErrRejected. The last datagram of any
// exchange may be lost: then one side can end with the peer stored and
// the other with ErrTimeout, which a second pairing repairs.
//
// Core is the pure state machine (time and randomness passed in); Listen
// and Dial are the loops that run it over a net.PacketConn.
package pair
