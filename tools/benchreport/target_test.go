package main

import "testing"

func TestTargetMetHonoursItsOperator(t *testing.T) {
	atLeast := target{Op: ">=", Value: 10}
	atMost := target{Op: "<=", Value: 10}
	for _, c := range []struct {
		t    target
		v    float64
		want bool
	}{
		{atLeast, 10, true}, {atLeast, 11, true}, {atLeast, 9.9, false},
		{atMost, 10, true}, {atMost, 9, true}, {atMost, 10.1, false},
		{target{Op: "=", Value: 10}, 10, false}, // an unknown operator meets nothing
	} {
		if have := c.t.met(c.v); have != c.want {
			t.Errorf("target %s %g, measured %g: want met=%v, have %v", c.t.Op, c.t.Value, c.v, c.want, have)
		}
	}
}
