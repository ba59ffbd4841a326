package inject

import (
	"os"
	"testing"
)

// TestMain lets the injectors under test start their guards, as keyrelay
// does: the test binary, started again, runs them.
func TestMain(m *testing.M) {
	ServeGuard()
	os.Exit(m.Run())
}
