package sender

import "time"

// RTT is the round-trip time estimator of RFC 6298 §2 (the one TCP and
// QUIC use, quic-go's internal/utils/rtt_stats.go): a smoothed RTT and its
// mean deviation, each sample weighted 1/8 and 1/4. The zero value has no
// sample yet.
type RTT struct {
	SRTT   time.Duration // smoothed round-trip time; 0 before a sample
	RTTVar time.Duration // its mean deviation
	Latest time.Duration // the last sample
	known  bool
}

// Known reports whether a sample has been taken.
func (r *RTT) Known() bool { return r.known }

// Sample feeds one measurement: the first sets SRTT to it and RTTVar to half
// of it (RFC 6298 §2.2), later ones move them by 1/8 and 1/4 (§2.3).
func (r *RTT) Sample(m time.Duration) {
	r.Latest = m
	if !r.known {
		r.SRTT, r.RTTVar, r.known = m, m/2, true
		return
	}
	d := r.SRTT - m
	if d < 0 {
		d = -d
	}
	r.RTTVar = (3*r.RTTVar + d) / 4
	r.SRTT = (7*r.SRTT + m) / 8
}
