package executor

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestTailBufferKeepsTheTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"nothing", 8, nil, ""},
		{"fits", 8, []string{"abc", "de"}, "abcde"},
		{"exactly full", 4, []string{"ab", "cd"}, "abcd"},
		{"wraps", 4, []string{"abc", "def"}, "cdef"},
		{"wraps many times", 3, []string{"a", "bcdefg", "h", "ij"}, "hij"},
		{"one write larger than the limit", 4, []string{"xy", "0123456789"}, "6789"},
		{"zero limit keeps nothing", 0, []string{"abc"}, ""},
	}
	for _, tt := range tests {
		b := newTailBuffer(tt.limit)
		total := 0
		for _, w := range tt.writes {
			n, err := b.Write([]byte(w))
			if n != len(w) || err != nil {
				t.Errorf("%s: Write(%q) = %d, %v; want %d, nil", tt.name, w, n, err, len(w))
			}
			total += n
		}
		if have := string(b.Bytes()); have != tt.want {
			t.Errorf("%s: want %q, have %q", tt.name, tt.want, have)
		}
		if have := b.Truncated(); have != (total > len(tt.want)) {
			t.Errorf("%s: truncated: want %v, have %v", tt.name, total > len(tt.want), have)
		}
	}
}

func TestTailBufferMatchesNaiveTail(t *testing.T) {
	t.Parallel()
	var all bytes.Buffer
	b := newTailBuffer(1000)
	for i := range 5000 {
		w := strings.Repeat(string(rune('a'+i%26)), i%37)
		all.WriteString(w)
		b.Write([]byte(w))
		want := all.Bytes()
		if len(want) > 1000 {
			want = want[len(want)-1000:]
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("after write %d: tail differs", i)
		}
	}
}

func TestDrainIntoReadsUntilEOF(t *testing.T) {
	t.Parallel()
	b := newTailBuffer(10)
	done := make(chan struct{}, 1)
	var bufs sync.Pool
	bufs.New = func() any { p := make([]byte, 3); return &p }
	drainInto(b, strings.NewReader("hello, world"), &bufs, done)
	<-done
	if have := string(b.Bytes()); have != "llo, world" {
		t.Errorf("want %q, have %q", "llo, world", have)
	}
}
