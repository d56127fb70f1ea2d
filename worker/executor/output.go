package executor

import (
	"io"
	"sync"
)

// tailBuffer keeps the last limit bytes written to it. Its storage grows
// with what is written, so a task that prints nothing costs nothing. It is
// not safe for concurrent use: one goroutine writes, and the result is read
// after that goroutine is done.
type tailBuffer struct {
	limit int
	buf   []byte // len(buf) ≤ limit; once full, a ring whose oldest byte is at start
	start int
	total int64 // bytes ever written
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

// Write keeps the tail of p; it never fails.
func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if b.limit <= 0 {
		return n, nil
	}
	if len(p) >= b.limit { // p alone fills the buffer
		p = p[len(p)-b.limit:]
		b.buf = append(b.buf[:0], p...)
		b.start = 0
		return n, nil
	}
	if room := b.limit - len(b.buf); room > 0 { // still growing
		k := min(room, len(p))
		b.buf = append(b.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 { // full: overwrite the oldest bytes
		k := copy(b.buf[b.start:], p)
		p = p[k:]
		b.start = (b.start + k) % b.limit
	}
	return n, nil
}

// Bytes returns the kept tail in order, or nil when nothing was written.
func (b *tailBuffer) Bytes() []byte {
	if len(b.buf) == 0 {
		return nil
	}
	if b.start == 0 {
		return b.buf
	}
	out := make([]byte, 0, len(b.buf))
	out = append(out, b.buf[b.start:]...)
	return append(out, b.buf[:b.start]...)
}

// Truncated reports whether earlier bytes were dropped.
func (b *tailBuffer) Truncated() bool { return b.total > int64(len(b.buf)) }

// readBufferSize is the size of drainInto's scratch buffers.
const readBufferSize = 32 << 10

// newReadBuffers returns a pool of drainInto's scratch buffers.
func newReadBuffers() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, readBufferSize); return &b }}
}

// drainInto copies r into b until r fails (EOF, a read deadline, closed),
// then signals done. It does not close r. Scratch buffers come from bufs.
func drainInto(b *tailBuffer, r io.Reader, bufs *sync.Pool, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	for {
		n, err := r.Read(*bp)
		b.Write((*bp)[:n])
		if err != nil {
			return
		}
	}
}
