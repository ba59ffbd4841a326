//go:build !unix

package report

import (
	"testing"
	"time"
)

// idleCPU needs getrusage(2), which Windows lacks: the figure is taken on
// Linux (make bench).
func idleCPU(t *testing.T, _ time.Duration) float64 {
	t.Skip("idle CPU is measured with getrusage(2), on Unix")
	return 0
}
