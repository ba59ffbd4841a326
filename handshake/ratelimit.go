package handshake

import (
	"container/list"
	"net/netip"
	"time"
)

// RateLimiter is a token bucket per source address, for the answers a
// receiver sends (responses, cookie replies) as WireGuard's ratelimiter:
// each source may get Burst answers at once and PerSecond a second after.
// IPv6 sources are counted per /64, since one host commonly holds a whole
// /64. The table is bounded: when full, the source heard least recently
// is forgotten, never the whole table, so a flood from many addresses
// cannot reset the buckets of the others. It is pure (time comes in) and
// not safe for concurrent use.
type RateLimiter struct {
	cost, max int64 // nanoseconds of credit per answer, and the most held
	size      int
	table     map[netip.Addr]*list.Element
	lru       list.List // of *bucket, least recently heard first
}

type bucket struct {
	src    netip.Addr
	tokens int64 // nanoseconds of credit
	last   time.Time
}

// NewRateLimiter makes a limiter allowing burst answers at once and
// perSecond a second to each source, remembering at most size sources.
func NewRateLimiter(perSecond, burst, size int) *RateLimiter {
	cost := int64(time.Second) / int64(max(perSecond, 1))
	return &RateLimiter{cost: cost, max: cost * int64(max(burst, 1)), size: max(size, 1), table: make(map[netip.Addr]*list.Element)}
}

func limiterKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// Allow reports whether src may be answered now, and if so takes the
// answer from its bucket.
func (l *RateLimiter) Allow(src netip.Addr, now time.Time) bool {
	key := limiterKey(src)
	if e, ok := l.table[key]; ok {
		b := e.Value.(*bucket)
		l.lru.MoveToBack(e)
		if d := now.Sub(b.last); d > 0 {
			b.tokens = min(b.tokens+int64(d), l.max)
		}
		b.last = now
		if b.tokens < l.cost {
			return false
		}
		b.tokens -= l.cost
		return true
	}
	if l.lru.Len() >= l.size {
		oldest := l.lru.Front()
		delete(l.table, oldest.Value.(*bucket).src)
		l.lru.Remove(oldest)
	}
	l.table[key] = l.lru.PushBack(&bucket{src: key, tokens: l.max - l.cost, last: now})
	return true
}

// Len is how many sources the limiter remembers.
func (l *RateLimiter) Len() int { return l.lru.Len() }
