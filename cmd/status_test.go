package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// TestUnknownLogFormat: --log-format takes text or json only; another is
// a usage error that names the choices.
func TestUnknownLogFormat(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run([]string{"recv", "--log-format", "xml"}, IO{Out: &out, Err: &errb}); code != ExitUsage || !strings.Contains(errb.String(), `unknown --log-format "xml" (choose text or json)`) {
		t.Errorf("--log-format xml: exit %d, %q", code, errb.String())
	}
}

// TestSendEndNamesOtherVersion (PROTOCOL.md §10.2): send's verdict on a
// receiver that answered with version notices only (relay's
// TestSendNamesOtherVersion: the report's OtherVersion) says why nothing
// was delivered, naming both versions, with exit status 3.
func TestSendEndNamesOtherVersion(t *testing.T) {
	addr := "127.0.0.1:9"
	rep := sender.Report{Dests: []sender.DestReport{{Addr: addr, Outcome: sender.OtherVersion, Heard: true,
		Peer: sender.PeerStatus{Addr: addr, Speaks: []uint8{wire.Version + 1}}}}}
	err := checkDelivery(&SendOptions{Feedback: true}, rep, "", func(string, ...any) {})
	says := fmt.Sprintf("%s speaks keyrelay protocol version %d; this sender speaks %d: install the same keyrelay release on both machines", addr, wire.Version+1, wire.Version)
	if !errors.As(err, &undeliveredError{}) || !strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("checkDelivery = %v, want undelivered: %q", err, says)
	}
}
