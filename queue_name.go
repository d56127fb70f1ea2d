package drover

import (
	"fmt"
	"slices"
	"unicode"
)

// MaxQueueNameLen is the longest queue name accepted, in bytes.
const MaxQueueNameLen = 200

// reservedQueueNames are refused although every character is allowed
// (they are path elements).
var reservedQueueNames = []string{".", ".."}

// ReservedQueueNames returns the names ValidateQueueName refuses although
// their characters are allowed: a copy, for producers in other languages
// (queue.Rules).
func ReservedQueueNames() []string { return slices.Clone(reservedQueueNames) }

// ValidateQueueName reports whether name may be used as a queue name: 1 to
// MaxQueueNameLen bytes, no '/', ':', '{', '}', white space, control
// characters or bidirectional controls (IsBidiControl) (names appear in
// ZooKeeper paths and in Redis hash tags, and are shown to people).
// The error wraps ErrInvalidQueueName and says what is wrong.
func ValidateQueueName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidQueueName)
	}
	if len(name) > MaxQueueNameLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidQueueName, len(name), MaxQueueNameLen)
	}
	if slices.Contains(reservedQueueNames, name) {
		return fmt.Errorf("%w: %q is reserved", ErrInvalidQueueName, name)
	}
	for i, r := range name {
		switch {
		case r == '/' || r == ':' || r == '{' || r == '}':
			return fmt.Errorf("%w: %q holds %q at byte %d", ErrInvalidQueueName, name, r, i)
		case unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar:
			return fmt.Errorf("%w: %q holds a control or space character at byte %d", ErrInvalidQueueName, name, i)
		case IsBidiControl(r):
			// Shown raw, "xss-\u202egnp.exe" reads as "xss-exe.png" in
			// the console and in a terminal (issue 41).
			return fmt.Errorf("%w: %+q holds the bidirectional control %U at byte %d", ErrInvalidQueueName, name, r, i)
		}
	}
	return nil
}
