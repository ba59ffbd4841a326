package cmd

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/keyrelay/keyrelay/relay"
	"github.com/keyrelay/keyrelay/sender"
	"github.com/keyrelay/keyrelay/wire"
)

// sendEnd says how a send ended, from what its Senders left (res) and
// the error that ended it (err): each one's summary, and the verdict,
// send's exit status (an undeliveredError: 3).
func sendEnd(o *SendOptions, res *relay.SendResult, err error) error {
	if na, ok := errors.AsType[*sender.NoAnswerError](err); ok {
		// Said of the first Sender that has a destination not answering.
		for _, r := range res.Sent {
			if !res.Routed || len(r.Sender.Unanswered()) > 0 || len(r.Sender.Peers()) == 0 {
				err = noAnswer(na, res.Fingerprint, r.Sender)
				break
			}
		}
	}
	silenced, _ := errors.AsType[*sender.SilentError](err)
	if silenced != nil {
		err = nil // said below, with what it cost
	}
	if !res.Routed {
		r := res.Sent[0]
		rep := r.Sender.Report()
		if err == nil {
			err = checkDelivery(o, rep, res.Fingerprint, res.Logf)
		}
		if silenced != nil {
			// checkDelivery names what the receiver missed of what was
			// played; the rest of the script never was.
			err = undeliveredError{fmt.Errorf("%v (exit status %d); %w", silenced, ExitUndelivered, cmp.Or(err, error(errNothingMissed)))}
		}
		if !o.Quiet || err != nil {
			summarize(o, res.Logger, res.Errf, res.Logf, rep, r.Stats, err == nil)
		}
		return err
	}
	var errs []error
	for _, r := range res.Sent {
		res.Logf("destination %s:", r.Name)
		rep := r.Sender.Report()
		var derr error
		if err == nil {
			derr = checkDelivery(o, rep, res.Fingerprint, res.Logf)
		}
		if !o.Quiet || derr != nil || err != nil || silenced != nil {
			summarize(o, res.Logger, res.Errf, res.Logf, rep, r.Stats, err == nil && derr == nil && silenced == nil)
		}
		if derr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, derr))
		}
	}
	if err != nil {
		return err
	}
	if silenced != nil {
		// Each destination's error names what it missed of what was
		// played; the rest of the script went to none.
		if len(errs) == 0 {
			return undeliveredError{fmt.Errorf("%v to any destination (exit status %d); %w", namedSilence(silenced, res.Sent), ExitUndelivered, errNothingMissed)}
		}
		return undeliveredError{fmt.Errorf("%v to any destination; %w", namedSilence(silenced, res.Sent), errors.Join(errs...))}
	}
	if len(errs) > 0 {
		return undeliveredError{errors.Join(errs...)}
	}
	return nil
}

// errNothingMissed completes a stop for a silent receiver whose ledger,
// oddly, shows nothing missed of what was played.
var errNothingMissed = errors.New("what was played before was acknowledged")

// undeliveredError is send's error when a receiver did not acknowledge the
// final state: exit status ExitUndelivered, which scripts test.
type undeliveredError struct{ err error }

func (e undeliveredError) Error() string { return e.err.Error() }
func (e undeliveredError) Unwrap() error { return e.err }

// noAnswer is send's error when a receiver did not answer within --wait:
// exit status ExitUndelivered, and what may keep each one silent.
func noAnswer(na *sender.NoAnswerError, fp string, s *sender.Sender) error {
	var why []string
	waiting := s.Unanswered() // the handshakes not answered, and on what each waits
	for _, a := range na.Addrs {
		_, port, _ := net.SplitHostPort(a)
		w := relay.WhyNoAnswer(port, fp)
		i := slices.IndexFunc(waiting, func(u sender.LinkState) bool { return u.Addr == a })
		if i >= 0 && waiting[i].Handshake != "" && waiting[i].Handshake != "no answer" {
			w = "its handshake: " + waiting[i].Handshake + "; " + w
		}
		why = append(why, fmt.Sprintf("%s: %s", a, w))
	}
	return undeliveredError{fmt.Errorf("no answer within --wait %v, so the keys were not sent and nothing was typed anywhere (exit status %d); %s", na.Wait, ExitUndelivered, strings.Join(why, "; "))}
}

// namedSilence is e with each receiver named as its destination is,
// "NAME (ADDR)", where the name is not the address itself.
func namedSilence(e *sender.SilentError, sent []relay.Sent) *sender.SilentError {
	named := &sender.SilentError{Outage: e.Outage}
	for _, a := range e.Addrs {
		for _, r := range sent {
			if r.Addr == a && r.Name != a {
				a = fmt.Sprintf("%s (%s)", r.Name, a)
				break
			}
		}
		named.Addrs = append(named.Addrs, a)
	}
	return named
}

// summarize logs send's final summary: the session's figures, then a line
// per receiver with what it acknowledged of the key events (the sender's
// ledger) and how the link behaved. With --log-format json each is a
// record whose fields carry the figures, for a CI job to read (msg keeps
// the same prose as the text log).
func summarize(o *SendOptions, logger *slog.Logger, errf, logf func(string, ...any), rep sender.Report, stats sender.Stats, confirmed bool) {
	asJSON := o.LogFormat == "json"
	undelivered, nowhere := 0, 0
	for _, d := range rep.Dests {
		undelivered += d.Delivery.Undelivered
		nowhere += d.Delivery.Nowhere
	}
	if asJSON {
		logger.Info(stats.String(), "summary", "session", "session", fmt.Sprintf("%016x", rep.Session),
			"events", stats.Events, "queued", stats.Queued, "dropped", stats.Dropped, "undelivered", undelivered, "nowhere", nowhere,
			"delivery_confirmed", confirmed && o.Feedback, "packets", stats.Packets, "bytes", stats.Bytes,
			"send_errors", stats.SendErrors, "bursts", stats.Bursts, "held", stats.Held, "overflow", stats.Overflow,
			"acks", stats.Acks, "ack_errors", stats.AckErrors, "handshakes", stats.Handshakes,
			"initiations", stats.Initiations, "cookies", stats.Cookies)
	} else {
		errf("%v", stats)
	}
	// Every accounted destination, heard or not, then the receivers heard
	// that are not (a broadcast's).
	var lines []receiverSummary
	for _, d := range rep.Dests {
		if d.Delivery.Accounted {
			lines = append(lines, receiverSummary{d.Delivery, d.Peer, d.Heard})
		}
	}
	for _, p := range rep.Others {
		lines = append(lines, receiverSummary{sender.Delivery{Addr: p.Addr}, p, true})
	}
	for _, r := range lines {
		msg := r.text(rep.Started)
		if !asJSON {
			logf("%s", msg)
			continue
		}
		attrs := []any{"summary", "receiver", "receiver", r.d.Addr}
		if r.d.Accounted {
			attrs = append(attrs, "delivered", r.d.Delivered, "undelivered", r.d.Undelivered)
			if r.d.Undelivered > 0 {
				attrs = append(attrs, "undelivered_from", r.d.First, "undelivered_to", r.d.Last)
			}
			if r.d.Nowhere > 0 {
				attrs = append(attrs, "nowhere", r.d.Nowhere, "nowhere_why", sender.NowhereWhy(r.d.Why))
			}
		}
		if r.heard && !r.p.LastHeard.IsZero() {
			attrs = append(attrs, "rtt_ms", msOf(r.p.SRTT), "rtt_var_ms", msOf(r.p.RTTVar), "loss", r.p.Loss,
				"lost", r.p.Lost, "settled", r.p.Settled, "last_heard_ms", msOf(time.Since(r.p.LastHeard)))
			if r.p.ClockKnown {
				attrs = append(attrs, "clock_offset_ms", msOf(r.p.ClockOffset))
			}
		}
		if r.p.Speaks != nil {
			attrs = append(attrs, "protocol_versions", wire.DescribeVersions(r.p.Speaks))
		}
		if !o.Quiet {
			logger.Info(msg, attrs...)
		}
	}
}

// receiverSummary is one receiver's line in send's summary.
type receiverSummary struct {
	d     sender.Delivery
	p     sender.PeerStatus
	heard bool
}

// text is the line's prose: what the receiver acknowledged, then its
// link's figures.
func (r receiverSummary) text(start time.Time) string {
	var parts []string
	if r.d.Accounted {
		switch {
		case r.d.Undelivered > 0:
			parts = append(parts, undeliveredSpan(r.d, start))
		case r.d.Nowhere == 0:
			parts = append(parts, fmt.Sprintf("all %d key events delivered", r.d.Delivered))
		}
		if r.d.Nowhere > 0 {
			parts = append(parts, nowhereCount(r.d)+" ("+sender.NowhereWhy(r.d.Why)+")")
		}
	}
	switch {
	case !r.heard:
		parts = append(parts, "never heard")
	case r.p.LastHeard.IsZero():
		// It only said it speaks another version (PROTOCOL.md §10).
		parts = append(parts, otherVersionState(r.p))
	default:
		clock := ""
		if r.p.ClockKnown {
			clock = fmt.Sprintf(", its clock %s", sender.DescribeOffset(r.p.ClockOffset))
		}
		parts = append(parts, fmt.Sprintf("rtt %v (±%v), %s, last heard %v ago%s",
			r.p.SRTT.Round(time.Microsecond), r.p.RTTVar.Round(time.Microsecond), lossText(r.p), time.Since(r.p.LastHeard).Round(time.Millisecond), clock))
	}
	return "receiver " + r.d.Addr + ": " + strings.Join(parts, ", ")
}

// msOf is d in milliseconds, for the JSON summary's fields.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// checkDelivery renders the sender's report (sender.Outcome) as send's
// verdict: with feedback, send exits 0 only when every receiver
// acknowledged the final state and every key event. Broadcast and
// multicast destinations are not waited for (any receiver may answer, or
// none), nor is anything with --feedback=false: both are one-way, and
// send says delivery was not confirmed.
func checkDelivery(o *SendOptions, rep sender.Report, fp string, logf func(string, ...any)) error {
	if !o.Feedback {
		logf("delivery not confirmed: one-way (--feedback=false), no receiver acknowledges")
		return nil
	}
	var missing []string
	oneWay := 0
	for _, d := range rep.Dests {
		if d.Outcome == sender.OneWay {
			oneWay++
			continue
		}
		_, port, _ := net.SplitHostPort(d.Addr)
		n := len(missing)
		switch d.Outcome {
		case sender.OtherVersion:
			// Its version notice (PROTOCOL.md §10) says why: a forged one
			// changes this message, never the exit status.
			missing = append(missing, fmt.Sprintf("%s %s", d.Addr, otherVersionState(d.Peer)))
		case sender.NoAnswer:
			missing = append(missing, fmt.Sprintf("%s never answered: %s (no handshake, so no key was sent to it)", d.Addr, relay.WhyNoAnswer(port, fp)))
		case sender.NoHandshake:
			missing = append(missing, fmt.Sprintf("%s never completed the handshake (%s): %s (no key was sent to it)", d.Addr, d.Handshake, relay.WhyNoAnswer(port, fp)))
		case sender.Unheard:
			missing = append(missing, fmt.Sprintf("%s never answered: %s", d.Addr, relay.WhyNoAnswer(port, fp)))
		case sender.Missed:
			missing = append(missing, fmt.Sprintf("%s: %s (last heard %v ago): it was down or unreachable longer than --outage %v, or stopped before the end; send those keys again",
				d.Addr, undeliveredSpan(d.Delivery, rep.Started), time.Since(d.Peer.LastHeard).Round(time.Millisecond), o.Outage))
		case sender.NotFinal:
			missing = append(missing, fmt.Sprintf("%s did not acknowledge the final state (last heard %v ago): it stopped, or the link dropped", d.Addr, time.Since(d.Peer.LastHeard).Round(time.Millisecond)))
		}
		if len(missing) > n && d.Delivery.Undelivered > 0 && d.Outcome != sender.Missed {
			// Named for why: how many keys that cost, and typed when.
			missing[n] += " (" + undeliveredSpan(d.Delivery, rep.Started) + ")"
		}
		if d.Delivery.Nowhere > 0 {
			// They reached the receiver, which typed them into no
			// application (PROTOCOL.md §9): not delivered.
			missing = append(missing, fmt.Sprintf("%s: %s, because %s: %s", d.Addr, nowhereCount(d.Delivery), sender.NowhereWhy(d.Delivery.Why), sender.NowhereFix(d.Delivery.Why)))
		}
	}
	if oneWay > 0 {
		logf("delivery to broadcast/multicast destinations is not confirmed (%d receivers answered)", rep.Heard)
	}
	if len(missing) > 0 {
		return undeliveredError{fmt.Errorf("delivery not confirmed (exit status %d): %s", ExitUndelivered, strings.Join(missing, "; "))}
	}
	if oneWay < len(rep.Dests) {
		logf("delivered: every receiver acknowledged the final state and all %d key events", rep.Events)
	}
	return nil
}

// nowhereCount says how many of d's key events its receiver typed into
// no application.
func nowhereCount(d sender.Delivery) string {
	return fmt.Sprintf("%d of %d key events were typed into no application", d.Nowhere, d.Delivered+d.Undelivered)
}

// undeliveredSpan says how many of d's key events never reached it, and
// when they were typed, as times of day and as offsets into the session
// that started at start.
func undeliveredSpan(d sender.Delivery, start time.Time) string {
	total := d.Delivered + d.Undelivered
	into := func(t time.Time) string { return t.Sub(start).Round(10 * time.Millisecond).String() }
	span := fmt.Sprintf("typed at %s, %s into the session", d.First.Format("15:04:05.000"), into(d.First))
	if d.Last.Sub(d.First) >= time.Millisecond {
		span = fmt.Sprintf("typed from %s to %s, %s to %s into the session", d.First.Format("15:04:05.000"), d.Last.Format("15:04:05.000"), into(d.First), into(d.Last))
	}
	return fmt.Sprintf("%d of %d key events never reached it, %s", d.Undelivered, total, span)
}

// otherVersionState says that receiver p speaks another protocol version
// than this sender (its version notice, PROTOCOL.md §10), and what to do.
func otherVersionState(p sender.PeerStatus) string {
	return fmt.Sprintf("speaks keyrelay protocol %s; this sender speaks %d: install the same keyrelay release on both machines", wire.DescribeVersions(p.Speaks), wire.Version)
}

// lossText is a receiver's loss in send's summary: measured over the
// packets whose fate its acks told, or said to be unmeasured when none
// was told (a session too short for an ack to settle a packet), rather
// than a loss of 0.0% over 0 packets.
func lossText(p sender.PeerStatus) string {
	if p.Settled == 0 {
		return "loss not measured (no packet's fate acknowledged yet)"
	}
	return fmt.Sprintf("loss %.1f%% (%d of %d packets)", 100*p.Loss, p.Lost, p.Settled)
}
