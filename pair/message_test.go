package pair

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden vectors under testdata/golden")

// The golden pairing: A (alpha, key a0 a1 .. bf, port 7575) pairs with B
// (bravo, key b0 b1 .. cf, port 7576), pairing id 00 01 .. 0f, Na = 32
// bytes of 0x11, Nb = 32 bytes of 0x22.
var (
	goldenID = [IDLen]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	goldenNa = [NonceLen]byte(bytes.Repeat([]byte{0x11}, NonceLen))
	goldenNb = [NonceLen]byte(bytes.Repeat([]byte{0x22}, NonceLen))
	// goldenCode is Code for the golden pairing (checked against Python's
	// hashlib as well).
	goldenCode = "618958"
	// The golden pairing's machines: made-up public keys, whose private
	// keys no one has. goldenShared stands for their Diffie-Hellman.
	goldenA      = info("alpha", 0xa0, 7575)
	goldenB      = info("bravo", 0xb0, 7576)
	goldenShared = [KeyLen]byte(bytes.Repeat([]byte{0x33}, KeyLen))
)

// goldenMessages are the five steps of the golden pairing, as in the
// package doc, each with its file under testdata/golden.
func goldenMessages() []struct {
	file string
	m    Message
} {
	cb := commitment(goldenID, goldenA, goldenB, goldenNb)
	return []struct {
		file string
		m    Message
	}{
		{"pair_v5_hello.hex", Message{Step: StepHello, ID: goldenID, Info: goldenA}},
		{"pair_v5_commit.hex", Message{Step: StepCommit, ID: goldenID, Info: goldenB, Commit: cb}},
		{"pair_v5_nonce.hex", Message{Step: StepNonce, ID: goldenID, Nonce: goldenNa}},
		{"pair_v5_reveal.hex", Message{Step: StepReveal, ID: goldenID, Nonce: goldenNb}},
		{"pair_v5_confirm.hex", Message{Step: StepConfirm, ID: goldenID, Answer: Yes, Have: HaveYours, MAC: goldenConfirmMAC()}},
	}
}

// goldenConfirmMAC is the golden confirm's MAC: A's yes, having B's
// answer, under the golden pairing's confirm key with goldenShared.
func goldenConfirmMAC() [MACLen]byte {
	k := ConfirmKey(goldenShared, goldenID, goldenA, goldenB, goldenNa, goldenNb)
	return [MACLen]byte(ConfirmMAC(k, true, goldenID, Yes, HaveYours))
}

func readHex(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.SplitSeq(string(raw), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// annotate writes b as the golden file's commented lines.
func annotate(m *Message, b []byte) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# keyrelay pairing %s (package pair's doc), step %d of the golden pairing\n", m.Step, m.Step)
	fmt.Fprintf(&s, "# in pair/message_test.go; written by go test ./pair -run TestGolden -update.\n")
	line := func(part []byte, what string) {
		fmt.Fprintf(&s, "%-50s # %s\n", fmt.Sprintf("% x", part), what)
	}
	chunk := func(part []byte, what string) {
		for len(part) > 16 {
			line(part[:16], what)
			part, what = part[16:], "..."
		}
		line(part, what)
	}
	line(b[:6], fmt.Sprintf(`"KR", version 5, type 7 pairing, step %d %s, reserved`, m.Step, m.Step))
	line(b[6:22], "pairing id")
	body := b[HeaderLen:]
	info := func(what string) {
		chunk(body[:KeyLen], what+"'s X25519 public key")
		line(body[KeyLen:KeyLen+2], fmt.Sprintf("port %d", m.Info.Port))
		line(body[KeyLen+2:KeyLen+3], fmt.Sprintf("name length %d", len(m.Info.Name)))
		chunk(body[KeyLen+3:InfoLen], fmt.Sprintf("name %q, zero-padded to 63 bytes", m.Info.Name))
	}
	switch m.Step {
	case StepHello:
		info("A")
		chunk(body[InfoLen:], "padding: a hello is as large as the commit answering it")
	case StepCommit:
		info("B")
		chunk(body[InfoLen:], "Cb = SHA-256(\"keyrelay pair commit v1\" || id || A's info || B's info || Nb)")
	case StepNonce:
		chunk(body, "Na")
	case StepReveal:
		chunk(body, "Nb")
	case StepConfirm:
		line(body[:1], "answer 1: yes")
		line(body[1:2], "have 1: has the other side's answer")
		line(body[2:], "MAC: HMAC-SHA256(key, \"A\" || id || answer || have), 16 bytes")
		fmt.Fprintf(&s, "# key = SHA-256(\"keyrelay pair confirm v1\" || shared || id || A's info || B's info || Na || Nb),\n")
		fmt.Fprintf(&s, "# shared (the machines' X25519) taken as 32 bytes of 0x33 here.\n")
	}
	return s.String()
}

// Each step's message for the golden pairing, byte for byte, parses back
// to itself; and the code both screens show for it.
func TestGolden(t *testing.T) {
	for _, g := range goldenMessages() {
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "golden", g.file)
			enc, err := g.m.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(path, []byte(annotate(&g.m, enc)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := readHex(t, path)
			if !bytes.Equal(enc, want) {
				t.Errorf("encoded\n% x\nwant\n% x", enc, want)
			}
			if len(enc) != g.m.Len() || len(enc) > 300 {
				t.Errorf("%d bytes, Len says %d (and at most 300)", len(enc), g.m.Len())
			}
			var m Message
			if err := Parse(want, &m); err != nil {
				t.Fatal(err)
			}
			if m != g.m {
				t.Errorf("parsed %+v\nwant   %+v", m, g.m)
			}
		})
	}
	if got := Code(goldenID, goldenA, goldenB, goldenNa, goldenNb); got != goldenCode {
		t.Errorf("code %s, want %s", got, goldenCode)
	}
}

// Every answer is exactly as large as the message it answers (package doc:
// a forged source address gains no amplification).
func TestAnswersAreNoLarger(t *testing.T) {
	for _, tc := range []struct{ question, answer Step }{
		{StepHello, StepCommit}, {StepNonce, StepReveal}, {StepConfirm, StepConfirm},
	} {
		if tc.answer.Len() > tc.question.Len() {
			t.Errorf("a %s (%d bytes) answers a %s (%d bytes)", tc.answer, tc.answer.Len(), tc.question, tc.question.Len())
		}
	}
}

// Every proper prefix of every golden message is an error, never a panic.
func TestTruncatedIsRejected(t *testing.T) {
	for _, g := range goldenMessages() {
		enc, _ := g.m.Append(nil)
		for n := range len(enc) {
			var m Message
			if err := Parse(enc[:n], &m); err == nil {
				t.Errorf("%s cut to %d bytes parsed", g.m.Step, n)
			}
		}
	}
}

// What Parse rejects (package doc), each with its sentinel.
func TestParseRejects(t *testing.T) {
	hello, _ := (&Message{Step: StepHello, ID: goldenID, Info: goldenA}).Append(nil)
	confirm, _ := (&Message{Step: StepConfirm, ID: goldenID, Answer: No}).Append(nil)
	with := func(b []byte, off int, v byte) []byte {
		b = bytes.Clone(b)
		b[off] = v
		return b
	}
	nameAt := HeaderLen + KeyLen + 3
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"bad magic", with(hello, 0, 'X'), ErrMagic},
		{"protocol 4", with(hello, offVersion, 4), ErrVersion},
		{"type 1 (a queue)", with(hello, offType, 1), ErrType},
		{"step 0", with(hello, offStep, 0), ErrStep},
		{"step 6", with(hello, offStep, 6), ErrStep},
		{"reserved byte set", with(hello, offReserved, 1), ErrField},
		{"a byte too many", append(bytes.Clone(hello), 0), ErrLength},
		{"hello as long as a nonce", with(hello[:NonceMsgLen], offStep, byte(StepHello)), ErrTruncated},
		{"non-zero padding", with(hello, HelloLen-1, 1), ErrField},
		{"byte after the name", with(hello, nameAt+len(goldenA.Name), 'x'), ErrField},
		{"name length 0", with(hello, nameAt-1, 0), ErrField},
		{"name length 64", with(hello, nameAt-1, 64), ErrField},
		{"control character in the name", with(hello, nameAt, 0x1b), ErrField},
		{"space in the name", with(hello, nameAt, ' '), ErrField},
		{"invalid UTF-8 in the name", with(hello, nameAt, 0xff), ErrField},
		{"all-zero key", append(append(bytes.Clone(hello[:HeaderLen]), make([]byte, KeyLen)...), hello[HeaderLen+KeyLen:]...), ErrField},
		{"answer 0", with(confirm, HeaderLen, 0), ErrField},
		{"answer 3", with(confirm, HeaderLen, 3), ErrField},
		{"have 3", with(confirm, HeaderLen+1, 3), ErrField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			err := Parse(tc.b, &m)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// Names shown to people and kept in peers files (CheckName).
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"bravo", true},
		{"media-pc.lan", true},
		{"küche", true},
		{strings.Repeat("x", 63), true},
		{"", false},
		{strings.Repeat("x", 64), false},
		{"two words", false},
		{"bell\a", false},
		{"esc\x1b[2J", false},
		{"rtl\u202eoverride", false},
		{"bad\xffutf8", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// FuzzParse: Parse never panics, and whatever it accepts encodes back to
// the same bytes (it is canonical). Seeded with every golden message.
func FuzzParse(f *testing.F) {
	for _, g := range goldenMessages() {
		enc, _ := g.m.Append(nil)
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		if err := Parse(b, &m); err != nil {
			return
		}
		enc, err := m.Append(nil)
		if err != nil {
			t.Fatalf("parsed %+v but cannot encode it: %v", m, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("parsed\n% x\nencodes to\n% x", b, enc)
		}
	})
}
