package sender_test

import (
	"strings"
	"testing"

	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// TestNowhereReasonsAreNamed (PROTOCOL.md §9, the why table): every reason
// an ack may give for keys typed into no application has its own words
// and fix in send's log and summary; an unknown one says the receiver is
// newer.
func TestNowhereReasonsAreNamed(t *testing.T) {
	seen := map[string]wire.Why{}
	for _, w := range []wire.Why{wire.WhyNoFocus, wire.WhyNoUSBHost, wire.WhyNoForeground} {
		why, fix := sender.NowhereWhy(w), sender.NowhereFix(w)
		if strings.Contains(why, "does not know") || fix == sender.NowhereFix(0xff) {
			t.Errorf("reason %d is not named: %q; %q", w, why, fix)
		}
		if o, dup := seen[why]; dup {
			t.Errorf("reasons %d and %d read the same: %q", o, w, why)
		}
		seen[why] = w
	}
	if why := sender.NowhereWhy(0xff); !strings.Contains(why, "newer release") {
		t.Errorf("an unknown reason reads %q, want it to say the receiver is newer", why)
	}
}
