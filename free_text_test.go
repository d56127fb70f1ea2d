package drover

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckReason(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ok       bool
		says     string // in the error
	}{
		{"plain", "smtp outage since 10:00 (ticket #42)", true, ""},
		{"unicode", "Wartung – Störung ✓", true, ""},
		{"at the limit", strings.Repeat("x", MaxReasonBytes), true, ""},
		{"one past the limit", strings.Repeat("x", MaxReasonBytes+1), false, "reason: 1025 bytes, at most 1024 bytes (1 KB)"},
		{"900 KB", strings.Repeat("x", 900<<10), false, "at most 1024 bytes (1 KB)"},
		{"newline", "a\nb", false, "U+000A"},
		{"NUL", "a\x00b", false, "U+0000"},
		{"DEL", "a\x7fb", false, "U+007F"},
		{"C1", "a\u0085b", false, "U+0085"},
		{"right-to-left override", "xss-\u202egnp.exe", false, "U+202E"},
		{"isolate", "a\u2066b", false, "U+2066"},
		{"right-to-left mark", "a\u200fb", false, "U+200F"},
		{"invalid UTF-8", "a\xffb", false, "UTF-8"},
	} {
		err := CheckReason("reason", c.in)
		if c.ok != (err == nil) {
			t.Errorf("%s: want ok=%v, have %v", c.name, c.ok, err)
			continue
		}
		if err != nil && (!errors.Is(err, ErrInvalidText) || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s: want ErrInvalidText saying %q, have %v", c.name, c.says, err)
		}
	}
}

func TestClipText(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short and clean", "http://evil.example", 256, "http://evil.example"},
		{"escaped", "a\r\nb\x00\u202ec\xff", 256, `a\r\nb\x00\u202ec\xff`},
		{"cut", strings.Repeat("é", 100), 50, strings.Repeat("é", 14) + "…[+172 bytes]"},
	} {
		if have := ClipText(c.in, c.max); have != c.want {
			t.Errorf("%s: want %q, have %q", c.name, c.want, have)
		}
	}
	huge := strings.Repeat("\n", 1<<20)
	if have := ClipText(huge, MaxAuditFieldBytes); len(have) > MaxAuditFieldBytes || !strings.HasSuffix(have, " bytes]") || strings.ContainsRune(have, '\n') {
		t.Errorf("1 MB of newlines: want at most %d escaped bytes ending in the count cut, have %d: %q", MaxAuditFieldBytes, len(have), have)
	}
}

func TestCheckLabels(t *testing.T) {
	many := make([]string, MaxLabels+1)
	for i := range many {
		many[i] = "t"
	}
	for _, c := range []struct {
		name string
		in   []string
		says string // "" for ok
	}{
		{"none", nil, ""},
		{"plain", []string{"gpu", "zone=eu-1", "ßig"}, ""},
		{"too many", many, "33 labels, at most 32"},
		{"too long", []string{strings.Repeat("x", MaxLabelBytes+1)}, "at most 128 bytes"},
		{"empty", []string{""}, "without white space"},
		{"space", []string{"a b"}, "without white space"},
		{"bidi", []string{"gpu\u202e"}, "U+202E"},
	} {
		err := CheckLabels("tags", c.in)
		if (c.says == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrInvalidText) || !strings.Contains(err.Error(), c.says))) {
			t.Errorf("%s: want %q, have %v", c.name, c.says, err)
		}
	}
}
