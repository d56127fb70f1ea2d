package commalist

import (
	"slices"
	"testing"
)

func TestSplitTrimsAndDropsEmptyItems(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{" a , b,,c ", []string{"a", "b", "c"}},
		{"host:1,host:2", []string{"host:1", "host:2"}},
	} {
		if have := Split(c.in); !slices.Equal(have, c.want) || (c.want == nil) != (have == nil) {
			t.Errorf("Split(%q): want %q, have %q", c.in, c.want, have)
		}
	}
}
