package pair

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/keyrelay/keyrelay/wire"
)

// Message layout (the package doc draws it).
const (
	offMagic    = 0
	offVersion  = 2
	offType     = 3
	offStep     = 4
	offReserved = 5
	offID       = 6
	// HeaderLen is the length of the header every message starts with.
	HeaderLen = 22

	Magic0 = 'K'
	Magic1 = 'R'
	// Version is the protocol version pairing messages carry: the version
	// whose receiver knows peers by their identity.
	Version = 5
	// TypePair is the packet type of every pairing message.
	TypePair = 7

	// IDLen is the length of a pairing id.
	IDLen = 16
	// NonceLen is the length of Na and Nb.
	NonceLen = 32
	// KeyLen is the length of an X25519 public key.
	KeyLen = 32
	// MaxName is the longest name an Info carries, in bytes.
	MaxName = 63
	// InfoLen is the encoded length of an Info: key, port, name length
	// and the name padded with zeros to MaxName, so every Info has the
	// same length and the hashes over them need no separators.
	InfoLen = KeyLen + 2 + 1 + MaxName

	helloPad = 32 // a hello is as large as the commit that answers it
)

// Encoded length of each step's message.
const (
	HelloLen    = HeaderLen + InfoLen + helloPad
	CommitLen   = HeaderLen + InfoLen + 32
	NonceMsgLen = HeaderLen + NonceLen
	RevealLen   = HeaderLen + NonceLen
	ConfirmLen  = HeaderLen + 2 + MACLen
)

// MACLen is the length of a confirm's MAC (Core: a truncated HMAC-SHA256
// under a key only the two machines can compute).
const MACLen = 16

// Step is the step of the exchange a message belongs to.
type Step uint8

// The steps, in the order they happen (package doc).
const (
	StepHello   Step = 1 // A → B: A's Info
	StepCommit  Step = 2 // B → A: B's Info and its commitment to Nb
	StepNonce   Step = 3 // A → B: Na
	StepReveal  Step = 4 // B → A: Nb
	StepConfirm Step = 5 // both ways: the person's answer
)

func (s Step) String() string {
	switch s {
	case StepHello:
		return "hello"
	case StepCommit:
		return "commit"
	case StepNonce:
		return "nonce"
	case StepReveal:
		return "reveal"
	case StepConfirm:
		return "confirm"
	}
	return fmt.Sprintf("step %d", uint8(s))
}

// Answer is a person's answer in a confirm message.
type Answer uint8

const (
	// Yes: the person saw the same code on both screens.
	Yes Answer = 1
	// No: the codes differed, the person declined, or the side gave up.
	No Answer = 2
)

// Have is how much a confirm's sender knows of the other side's answer.
type Have uint8

const (
	// HaveNone: it has not heard the other side's answer.
	HaveNone Have = 0
	// HaveYours: it has the other side's answer.
	HaveYours Have = 1
	// HaveBoth: it has the other side's answer and knows the other side
	// has its own; a confirm saying so is never answered.
	HaveBoth Have = 2
)

// Sentinel errors; every parsing error wraps exactly one of them.
var (
	ErrTruncated = errors.New("pairing message truncated")
	// Magic and version are checked as in every keyrelay packet: the
	// same errors as package wire's, not copies of them.
	ErrMagic   = wire.ErrMagic
	ErrVersion = wire.ErrVersion
	ErrType    = errors.New("not a pairing message")
	ErrStep    = errors.New("unknown pairing step")
	ErrLength  = errors.New("pairing message of the wrong length for its step")
	ErrField   = errors.New("malformed pairing message field")
)

// Info is what one side tells the other about itself: what its peers file
// keeps of it.
type Info struct {
	// Name names the machine to people (its hostname by default): 1..63
	// bytes of UTF-8, printable, no spaces (CheckName).
	Name string
	// Key is the machine's static X25519 public key.
	Key [KeyLen]byte
	// Port is the UDP port its recv listens on.
	Port uint16
}

// CheckName reports why name cannot name a machine: it is shown on the
// other machine's screen and kept in its peers file, so it must be short,
// valid UTF-8 and free of anything a terminal would act on (control and
// format characters) or that would make it read as two words.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrField)
	case len(name) > MaxName:
		return fmt.Errorf("%w: name of %d bytes (at most %d)", ErrField, len(name), MaxName)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrField, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: name %q holds %U (letters, digits and punctuation only)", ErrField, name, r)
		}
	}
	return nil
}

// Check reports why i cannot be sent or accepted.
func (i Info) Check() error {
	if err := CheckName(i.Name); err != nil {
		return err
	}
	if i.Key == ([KeyLen]byte{}) {
		return fmt.Errorf("%w: all-zero public key", ErrField)
	}
	return nil
}

// append appends i's fixed-length encoding: key, port, name length, name
// padded with zeros to MaxName. It is for an i that passed Check.
func (i Info) append(b []byte) []byte {
	b = append(b, i.Key[:]...)
	b = binary.BigEndian.AppendUint16(b, i.Port)
	b = append(b, byte(len(i.Name)))
	b = append(b, i.Name...)
	var pad [MaxName]byte
	return append(b, pad[:MaxName-len(i.Name)]...)
}

func parseInfo(b []byte) (Info, error) {
	var i Info
	copy(i.Key[:], b)
	i.Port = binary.BigEndian.Uint16(b[KeyLen:])
	n := int(b[KeyLen+2])
	name := b[KeyLen+3 : KeyLen+3+MaxName]
	if n > MaxName {
		return i, fmt.Errorf("%w: name length %d (at most %d)", ErrField, n, MaxName)
	}
	for _, c := range name[n:] {
		if c != 0 {
			return i, fmt.Errorf("%w: non-zero byte after the name", ErrField)
		}
	}
	i.Name = string(name[:n])
	return i, i.Check()
}

// Message is one pairing message. Which fields count depends on Step.
type Message struct {
	Step Step
	// ID is the pairing id, chosen at random by the side that dials.
	ID [IDLen]byte
	// Info is the sender's Info (hello, commit).
	Info Info
	// Commit is Cb (commit).
	Commit [32]byte
	// Nonce is Na (nonce) or Nb (reveal).
	Nonce [NonceLen]byte
	// Answer and Have make a confirm, MAC authenticates it.
	Answer Answer
	Have   Have
	MAC    [MACLen]byte
}

// Len is the encoded length of a message of step s (0 for no step).
func (s Step) Len() int {
	switch s {
	case StepHello:
		return HelloLen
	case StepCommit:
		return CommitLen
	case StepNonce:
		return NonceMsgLen
	case StepReveal:
		return RevealLen
	case StepConfirm:
		return ConfirmLen
	}
	return 0
}

// Len is m's encoded length.
func (m *Message) Len() int { return m.Step.Len() }

// Append appends the encoded message to b, or says why m cannot be sent.
func (m *Message) Append(b []byte) ([]byte, error) {
	switch m.Step {
	case StepHello, StepCommit:
		if err := m.Info.Check(); err != nil {
			return b, err
		}
	case StepConfirm:
		if m.Answer != Yes && m.Answer != No || m.Have > HaveBoth {
			return b, fmt.Errorf("%w: answer %d, have %d", ErrField, m.Answer, m.Have)
		}
	case StepNonce, StepReveal:
	default:
		return b, fmt.Errorf("%w: %d", ErrStep, m.Step)
	}
	b = append(b, Magic0, Magic1, Version, TypePair, byte(m.Step), 0)
	b = append(b, m.ID[:]...)
	switch m.Step {
	case StepHello:
		b = m.Info.append(b)
		var pad [helloPad]byte
		b = append(b, pad[:]...)
	case StepCommit:
		b = m.Info.append(b)
		b = append(b, m.Commit[:]...)
	case StepNonce, StepReveal:
		b = append(b, m.Nonce[:]...)
	case StepConfirm:
		b = append(b, byte(m.Answer), byte(m.Have))
		b = append(b, m.MAC[:]...)
	}
	return b, nil
}

// Parse decodes a pairing message into m. It is strict and total: every
// malformed input is an error wrapping one of the sentinels above, never a
// panic, and whatever parses encodes again to the same bytes.
func Parse(b []byte, m *Message) error {
	*m = Message{}
	if len(b) >= offVersion && (b[offMagic] != Magic0 || b[offMagic+1] != Magic1) {
		return ErrMagic
	}
	if len(b) < HeaderLen {
		return fmt.Errorf("%w: %d bytes, the header needs %d", ErrTruncated, len(b), HeaderLen)
	}
	if b[offVersion] != Version {
		return fmt.Errorf("%w: %d (pairing speaks %d; install the same keyrelay release on both machines)", ErrVersion, b[offVersion], Version)
	}
	if b[offType] != TypePair {
		return fmt.Errorf("%w: type %d", ErrType, b[offType])
	}
	if b[offReserved] != 0 {
		return fmt.Errorf("%w: reserved byte %#02x", ErrField, b[offReserved])
	}
	step := Step(b[offStep])
	want := step.Len()
	switch {
	case want == 0:
		return fmt.Errorf("%w: %d", ErrStep, b[offStep])
	case len(b) < want:
		return fmt.Errorf("%w: %d bytes, a %s needs %d", ErrTruncated, len(b), step, want)
	case len(b) > want:
		return fmt.Errorf("%w: %d bytes, a %s has %d", ErrLength, len(b), step, want)
	}
	m.Step = step
	copy(m.ID[:], b[offID:])
	body := b[HeaderLen:]
	var err error
	switch step {
	case StepHello:
		if m.Info, err = parseInfo(body); err != nil {
			return err
		}
		for _, c := range body[InfoLen:] {
			if c != 0 {
				return fmt.Errorf("%w: non-zero padding in a hello", ErrField)
			}
		}
	case StepCommit:
		if m.Info, err = parseInfo(body); err != nil {
			return err
		}
		copy(m.Commit[:], body[InfoLen:])
	case StepNonce, StepReveal:
		copy(m.Nonce[:], body)
	case StepConfirm:
		m.Answer, m.Have = Answer(body[0]), Have(body[1])
		if m.Answer != Yes && m.Answer != No || m.Have > HaveBoth {
			return fmt.Errorf("%w: answer %d, have %d", ErrField, m.Answer, m.Have)
		}
		copy(m.MAC[:], body[2:])
	}
	return nil
}
