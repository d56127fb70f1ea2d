package queue

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// idSource generates message ids in the ULID layout (github.com/ulid/spec):
// a 48-bit millisecond timestamp followed by 80 random bits, written as 26
// characters of Crockford's base32. Ids from one source are strictly
// increasing, also within one millisecond (the random part is then
// incremented, as the spec's monotonic mode does) and when the clock steps
// back (the last timestamp is kept). Randomness comes from crypto/rand, so
// ids of different processes do not collide in practice.
//
// It is written here rather than imported: the spec fits in this file, and
// the queue package should not pull a dependency for 60 lines.
type idSource struct {
	now func() time.Time

	mu     sync.Mutex
	lastMs uint64
	hi     uint16 // top 16 of the 80 random bits
	lo     uint64 // low 64 of the 80 random bits
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// maxULIDTime is the largest timestamp 48 bits hold.
const maxULIDTime = 1<<48 - 1

// next returns a new id, greater than every id this source returned before.
func (g *idSource) next() (string, error) {
	ms := uint64(g.now().UnixMilli())
	g.mu.Lock()
	defer g.mu.Unlock()
	if ms <= g.lastMs {
		// Same millisecond, or the clock stepped back: stay monotonic.
		g.lo++
		if g.lo == 0 {
			g.hi++
			if g.hi == 0 { // 80 bits exhausted: borrow the next millisecond
				g.lastMs++
			}
		}
	} else {
		var b [10]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generate message id: %w", err)
		}
		g.lastMs = ms
		g.hi = binary.BigEndian.Uint16(b[:2])
		g.lo = binary.BigEndian.Uint64(b[2:])
	}
	if g.lastMs > maxULIDTime {
		return "", fmt.Errorf("generate message id: time %d ms beyond the 48-bit range", g.lastMs)
	}
	return encodeULID(g.lastMs, g.hi, g.lo), nil
}

// encodeULID writes 48 bits of time and 80 bits of randomness as 26
// base32 characters, most significant first.
func encodeULID(ms uint64, hi uint16, lo uint64) string {
	var out [26]byte
	// 128 bits, as two halves: high = time<<16 | hi, low = lo.
	h := ms<<16 | uint64(hi)
	// The first character holds the top 3 bits (26*5 = 130 bits, 2 unused).
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | (h&31)<<59
		h >>= 5
	}
	return string(out[:])
}
