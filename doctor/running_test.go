package doctor

import (
	"context"
	"testing"

	"github.com/keyrelay/keyrelay/control"
	"github.com/keyrelay/keyrelay/control/controltest"
)

// TestDoctorShowsTheRunningSend: with a send with named destinations
// running, doctor names its target and each destination, its state and
// whether it gets characters (as keyrelay status does); with none, it
// says so without failing.
func TestDoctorShowsTheRunningSend(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if c := runningSend(); c.Skipped == "" || c.Err != nil {
		t.Errorf("no send running: %+v, want skipped", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	send := controltest.New("mac", "mac", "pc")
	send.Dests = []control.DestStatus{
		{Name: "mac", Addr: "127.0.0.1:1", State: "live", Live: true, Keys: "characters"},
		{Name: "pc", Addr: "127.0.0.1:2", State: "no answer yet", Keys: "physical"}}
	if err := control.Listen(ctx, control.Path(), send); err != nil {
		t.Fatal(err)
	}
	c := runningSend()
	want := "target mac; destinations mac 127.0.0.1:1 (live, characters), pc 127.0.0.1:2 (no answer yet)"
	if c.Err != nil || c.OK != want {
		t.Errorf("running send: %+v\nwant ok %q", c, want)
	}
}
