package doctor

import (
	"fmt"
	"strings"

	"github.com/keyrelay/keyrelay/control"
)

// runningSend is doctor's look at the keyrelay sends running as this
// user: each one's target and each destination's state. None running is
// no failure: send may not be started yet.
func runningSend() Check {
	sends, err := control.Sends(0)
	if err != nil {
		return Check{Name: "running send", Skipped: "none runs as this user now (keyrelay switch and status talk to one)"}
	}
	var all []string
	for _, s := range sends {
		var ds []string
		for _, d := range s.Answer.Dests {
			k := ""
			if d.Keys == "characters" {
				k = ", characters"
			}
			ds = append(ds, fmt.Sprintf("%s %s (%s%s)", d.Name, d.Addr, d.State, k))
		}
		line := "target " + s.Answer.Target + "; destinations " + strings.Join(ds, ", ")
		if len(sends) > 1 {
			line = fmt.Sprintf("pid %d: %s", s.Answer.PID, line)
		}
		all = append(all, line)
	}
	return Check{Name: "running send", OK: strings.Join(all, "; ")}
}
