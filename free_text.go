package drover

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the free text operators and clients write into the fleet's
// shared state (docs/web.md, "Limits"; docs/cli.md, "Limits"). Text is
// checked where it enters (the console's forms and API, `drover ctl`,
// package internal/ops) and refused whole, before anything reaches
// ZooKeeper or Redis: a ZooKeeper node holds at most 1 MB and a multi
// carries many, so one long reason could otherwise fail a bulk write.
const (
	// MaxReasonBytes bounds a pause or cancel reason.
	MaxReasonBytes = 1024
	// MaxAuditFieldBytes bounds each short field of an audit record (who,
	// role, via, remote address, action, target), and what an audit
	// record keeps of a request's Host, Origin or User-Agent.
	MaxAuditFieldBytes = 256
	// MaxAuditTextBytes bounds an audit record's detail and result.
	MaxAuditTextBytes = 4096
	// MaxLabelBytes bounds one label (a queue's tag), MaxLabels their
	// number on one queue.
	MaxLabelBytes = 128
	MaxLabels     = 32
)

// ErrInvalidText: a free-text value is too long or holds characters it may
// not (control characters, bidirectional controls, invalid UTF-8).
var ErrInvalidText = errors.New("drover: invalid text")

// CheckReason checks a free-text reason: at most MaxReasonBytes of UTF-8,
// with no control character (newlines and tabs included) and no
// bidirectional control (IsBidiControl). field names it in the error,
// which wraps ErrInvalidText.
func CheckReason(field, s string) error {
	return CheckText(field, s, MaxReasonBytes)
}

// CheckText is CheckReason with the limit max (bytes).
func CheckText(field, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s: %d bytes, at most %s", ErrInvalidText, field, len(s), sizeName(max))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s: not valid UTF-8", ErrInvalidText, field)
	}
	for i, r := range s {
		if unicode.IsControl(r) || IsBidiControl(r) {
			return fmt.Errorf("%w: %s: holds the control character %U at byte %d (control and bidirectional characters are refused)", ErrInvalidText, field, r, i)
		}
	}
	return nil
}

// CheckLabels checks labels (a queue's tags) as they are written: at most
// MaxLabels, each non-empty, at most MaxLabelBytes, without white space,
// control or bidirectional characters. field names them in the error,
// which wraps ErrInvalidText. Stored configurations are not held to it
// when read (QueueConfig.Validate does not call it).
func CheckLabels(field string, labels []string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%w: %s: %d labels, at most %d", ErrInvalidText, field, len(labels), MaxLabels)
	}
	for _, l := range labels {
		if l == "" || strings.ContainsFunc(l, unicode.IsSpace) {
			return fmt.Errorf("%w: %s: %q: want a label without white space", ErrInvalidText, field, ClipText(l, 64))
		}
		if err := CheckText(field, l, MaxLabelBytes); err != nil {
			return err
		}
	}
	return nil
}

// sizeName is "1024 bytes (1 KB)" or "300 bytes".
func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d bytes (%d KB)", n, n/1024)
	}
	return fmt.Sprintf("%d bytes", n)
}

// IsBidiControl reports whether r changes the direction of the text
// around it: the embeddings and overrides U+202A–U+202E, the isolates
// U+2066–U+2069 and the marks U+200E, U+200F and U+061C. Shown raw, they
// make "xss-\u202egnp.exe" read as "xss-exe.png".
func IsBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// ClipText returns s made safe to store and show: every control character,
// bidirectional control and invalid byte escaped (`\n`, `\u202e`, `\xff`),
// and the result cut to at most limitBytes bytes, ending "…[+N bytes]" when it was
// cut (N counts the bytes of s left out). Its cost is bounded by limitBytes, not
// by len(s). Audit records pass every field through it.
func ClipText(s string, limitBytes int) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || IsBidiControl(r) {
			clean = false
			break
		}
	}
	if clean && len(s) <= limitBytes {
		return s
	}
	const reserve = len("…[+9999999999 bytes]")
	limit := max(limitBytes-reserve, 0)
	var b strings.Builder
	b.Grow(min(len(s), limitBytes))
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+n]
		switch {
		case r == utf8.RuneError && n <= 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case unicode.IsControl(r) || IsBidiControl(r):
			piece = strings.Trim(strconv.QuoteRuneToASCII(r), "'")
		}
		if b.Len()+len(piece) > limit {
			break
		}
		b.WriteString(piece)
		i += n
	}
	if i < len(s) {
		fmt.Fprintf(&b, "…[+%d bytes]", len(s)-i)
	}
	return b.String()
}
