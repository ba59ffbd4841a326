package inject

import "github.com/keyrelay/keyrelay/sink"

// LastReached says whether the key event Hidg typed last reached the USB
// host (receiver.Aimed): sink.NoUSBHost when the write of its report
// failed (flush), as it does while no computer has configured the gadget
// (ESHUTDOWN: no cable, the computer off or asleep) or when none read the
// report before within hidgWriteTimeout; the event went to no
// application then. An event that needed no report (rollover on
// rollover, a character's release) is where the last write left it.
func (h *Hidg) LastReached() sink.Unreached {
	if h.failing {
		return sink.NoUSBHost
	}
	return sink.Reached
}
