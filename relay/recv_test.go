package relay

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyrelay/keyrelay/inject"
	"github.com/keyrelay/keyrelay/internal/config"
)

// TestAutoChoosesANewInjector: an injector added to inject.Backends with
// a rank is --inject auto's choice where its condition holds, and not
// where it does not (DESIGN.md, "Backends"); recv makes it.
func TestAutoChoosesANewInjector(t *testing.T) {
	saved := inject.Backends
	t.Cleanup(func() { inject.Backends = saved })
	made := false
	inject.Backends = append(slices.Clone(saved), inject.Backend{
		Name: "fakekbd", Short: "a fake keyboard for tests", Help: "types into a fake keyboard that only this test sees",
		Auto: &inject.Auto{Rank: 1, When: func(h inject.Host) bool { return h.Getenv("KEYRELAY_TEST_FAKEKBD") != "" },
			Desc: "when $KEYRELAY_TEST_FAKEKBD is set", Unmet: "no KEYRELAY_TEST_FAKEKBD"},
		New: func(o inject.Options) (inject.Injector, error) { made = true; return &inject.Log{W: o.Out}, nil },
	})
	// auto: first when its condition holds, the others' order otherwise.
	t.Setenv("KEYRELAY_TEST_FAKEKBD", "")
	if b, err := chooseInjector("auto", nil); err == nil && b.Name == "fakekbd" {
		t.Errorf("auto picked fakekbd without its condition")
	}
	t.Setenv("KEYRELAY_TEST_FAKEKBD", "1")
	if b, err := chooseInjector("auto", nil); err != nil || b.Name != "fakekbd" {
		t.Errorf("auto picked %s (%v), want fakekbd (rank 1, its condition holds)", b.Name, err)
	}
	var out strings.Builder
	inj, name, err := newInjector("auto", "", "", &out, nil)
	if err != nil || name != "fakekbd" || !made {
		t.Fatalf("newInjector(auto) = %v %q %v, want the fake made", inj, name, err)
	}
	inj.Close()
	if !slices.Contains(InjectorNames(), "fakekbd") {
		t.Errorf("--inject's values %v lack fakekbd", InjectorNames())
	}
}

// TestRecvInsecureNeedsLoopbackOrAllow: recv --insecure listening where
// anyone can reach it, with no --allow, is a usage error saying so; on
// loopback, or with --allow, it runs.
func TestRecvInsecureNeedsLoopbackOrAllow(t *testing.T) {
	for _, tc := range []struct {
		listen string
		allow  []string
		ok     bool
	}{
		{":0", nil, false},
		{"0.0.0.0:0", nil, false},
		{"[::]:0", nil, false},
		{"127.0.0.1:0", nil, true},
		{"[::1]:0", nil, true},
		{"localhost:0", nil, true},
		{":0", []string{"192.168.1.0/24"}, true},
	} {
		o := &RecvOptions{Listen: tc.listen, Allow: tc.allow, Inject: "log", LogFormat: "text", MaxSkew: time.Second, Timeout: time.Second,
			Key: KeyOptions{Insecure: true}}
		err := o.Check()
		var ue config.UsageError
		switch {
		case tc.ok && err != nil:
			t.Errorf("--listen %s --allow %v: %v", tc.listen, tc.allow, err)
		case !tc.ok && (!errors.As(err, &ue) || !strings.Contains(fmt.Sprint(err), "would let anyone who can reach this port type on this machine") || !strings.Contains(fmt.Sprint(err), "--allow")):
			t.Errorf("--listen %s: %v, want a usage error naming loopback and --allow", tc.listen, err)
		}
	}
}
