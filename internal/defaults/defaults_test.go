package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	for _, c := range []struct {
		v, want time.Duration
	}{{0, time.Second}, {-time.Millisecond, time.Second}, {time.Millisecond, time.Millisecond}} {
		if have := Positive(c.v, time.Second); have != c.want {
			t.Errorf("Positive(%s, 1s): want %s, have %s", c.v, c.want, have)
		}
	}
	if have := Positive(int64(-3), 7); have != 7 {
		t.Errorf("Positive(-3, 7): want 7, have %d", have)
	}
}
