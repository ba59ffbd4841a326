package inject

//go:generate go run gen.go -out robotgo_keys_gen.go

import (
	"sort"

	"github.com/keyrelay/keyrelay/keys"
)

// RobotgoName returns the robotgo key name that presses code, if robotgo
// can press it.
func RobotgoName(code keys.Code) (string, bool) {
	n, ok := robotgoNames[code]
	return n, ok
}

// RobotgoKeys lists the keys robotgo can press, in code order.
func RobotgoKeys() []keys.Code {
	out := make([]keys.Code, 0, len(robotgoNames))
	for c := range robotgoNames {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
