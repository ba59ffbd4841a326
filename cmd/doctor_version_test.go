package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/doctor"
	"github.com/keyrelay/keyrelay/internal/testutil/fake"
	"github.com/keyrelay/keyrelay/wire"
)

// TestDoctorNamesVersionMismatch (PROTOCOL.md §10): a --peer that answers
// the probe with a version notice fails with both versions named and the
// fix (the same release on both machines), not the "no answer" causes.
func TestDoctorNamesVersionMismatch(t *testing.T) {
	isolate(t)
	_, keyFile := newKeyFile(t, "")
	peer := fake.OtherVersion(t, wire.Version+1)
	var out bytes.Buffer
	err := runDoctor(context.Background(), IO{Out: &out, Err: &out}, &doctor.Options{
		Role: doctor.RoleSend, Inject: "log", Input: "script", Listen: "127.0.0.1:0", KeyFile: keyFile, Peer: peer, ProbeTimeout: 2 * time.Second})
	text := out.String()
	want := fmt.Sprintf("FAIL  round trip to %s: the recv there speaks keyrelay protocol version %d; this keyrelay speaks %d", peer, wire.Version+1, wire.Version)
	if err == nil || !strings.Contains(text, want) || !strings.Contains(text, "install the same keyrelay release on both machines") || strings.Contains(text, "no answer within") {
		t.Errorf("err %v; want %q and its fix\n%s", err, want, text)
	}
}
