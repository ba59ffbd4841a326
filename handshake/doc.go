// Package handshake is keyrelay protocol 5's key exchange and transport
// keys: the Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake between a sender
// (initiator, which knows the receiver's static public key) and a receiver
// (responder, which learns the sender's key from the first message and
// accepts only a paired peer), its three messages, WireGuard's defences
// against denial of service (mac1, mac2 and cookies, the per-peer timestamp
// and initiation rate, a per-source answer limiter), and the Keypair that
// seals and opens the packets after it (PROTOCOL.md §8.2, §8.3). Modelled on
// wireguard-go's device/noise-protocol.go, device/cookie.go and
// device/keypair.go and on the WireGuard paper §5.4.
//
// The package is pure: it reads no clock (time comes in as an argument),
// opens no socket, starts no goroutine and draws randomness only from the
// io.Reader in its configs, so every byte it makes can be reproduced.
//
// Every handshake message starts with protocol 5's 22-byte header
// (PROTOCOL.md §2), big-endian, flags 0; transport packets (flags SEALED)
// have the compact header below (queue packets and acks of no handshake,
// one-way or plaintext, carry ONEWAY and the 22-byte header: Parse passes
// them on whole, for package wire):
//
//	 0      2     3     4     5      6                14                22
//	+------+-----+-----+-----+------+-----------------+-----------------+
//	|magic |ver  |type |flags|rsvd  | session id      | packet counter  |
//	|"KR"  | 5   |     |     | 0    | u64, non-zero   | u64, non-zero   |
//	+------+-----+-----+-----+------+-----------------+-----------------+
//
// Initiation, type 3, sender → receiver, InitiationLen = 166 bytes. The
// header is the sender's session id and its next packet counter:
//
//	0 header 22 sender index 26 ephemeral 58 static (sealed) 106 timestamp (sealed) 134 mac1 150 mac2 166
//	          u32              32 bytes     32 + tag 16          TAI64N 12 + tag 16   16       16
//
// (offsets offInitSender, offInitEphemeral, offInitStatic,
// offInitTimestamp, offInitMAC1, offInitMAC2). Bytes 26..134 are Noise
// message 1: -> e, es, s, ss, {timestamp}.
//
// Response, type 4, receiver → sender, ResponseLen = 110 bytes, the header
// echoing the initiation's session id and counter:
//
//	0 header 22 sender index 26 receiver index 30 ephemeral 62 empty (tag) 78 mac1 94 mac2 110
//	          echoed u32        u32                32 bytes     16             16       16
//
// (offRespSender, offRespReceiver, offRespEphemeral, offRespEmpty,
// offRespMAC1, offRespMAC2). Bytes 30..78 are Noise message 2:
// <- e, ee, se, psk, {}.
//
// Cookie reply, type 6, receiver → sender, CookieReplyLen = 82 bytes, the
// header echoing the initiation's session id and counter:
//
//	0 header 22 sender index 26 nonce 50 cookie (sealed) 82
//	          echoed u32        24 bytes  16 + tag 16
//
// (offCookieSender, offCookieNonce, offCookieSealed): the cookie sealed
// with XChaCha20-Poly1305 under BLAKE2s-256("cookie--" ‖ receiver static
// public key), the associated data the mac1 of the initiation it answers.
//
// Transport, types 1 (queue, sender → receiver) and 2 (ack, receiver →
// sender), flags SEALED, at least TransportMinLen = 27 bytes: the compact
// header, whose counter is a uvarint (1 byte up to 127, 2 up to 16383; at
// most 10), so the ciphertext starts at Header.Len(), 11 to 20:
//
//	0 "KR" 5 type 1 0   6 recipient index 10 counter  11.. ciphertext ... tag 16
//	                      u32                uvarint
//
// (offTransportIndex, offTransportCounter): the index is the receiver's on
// queue packets and the sender's on acks, so each end finds the keypair
// with one lookup, and with it the session: the packet carries no session
// id, as each keypair belongs to one session at both ends (the prologue
// authenticated it). The associated data is every byte before the
// ciphertext, the nonce 4 zero bytes ‖ the counter's 8 bytes (big-endian,
// PROTOCOL.md §8.3).
//
// mac1 = BLAKE2s-128(key = BLAKE2s-256("mac1----" ‖ the recipient's static
// public key), the message up to mac1): anyone may compute it, but only
// someone who knows the recipient's public key, so anything else is
// rejected before any Diffie-Hellman. mac2 = BLAKE2s-128(key = the cookie,
// the message up to mac2), or zeros without a cookie; cookie =
// BLAKE2s-128(key = a responder secret renewed every CookieRefreshTime,
// the source IP and port). A responder told it is under load requires a
// valid mac2 and answers an initiation without one by a cookie reply,
// doing no Diffie-Hellman: a flood from forged addresses then costs it a
// hash and an XChaCha20 per packet, and what it sends back (82 bytes for
// 166, to the forged address, rate-limited per source by the caller:
// RateLimiter) amplifies nothing.
//
// The Noise prologue is "keyrelay protocol 5" followed by the initiation's
// first 26 bytes (header and sender index), so the handshake authenticates
// them: mac1 cannot, being keyed with a public value.
//
// Who does what over time is in the doc of RekeyAfterTime.
package handshake
