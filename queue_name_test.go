package drover

import (
	"errors"
	"strings"
	"testing"
)

// TestQueueNamesRefuseBidirectionalControls: a name holding a
// bidirectional control is refused naming it (issue 41: "xss-\u202egnp.exe"
// shows as "xss-exe.png"), as are control characters; right-to-left
// letters themselves are names like any other.
func TestQueueNamesRefuseBidirectionalControls(t *testing.T) {
	for _, name := range []string{"xss-\u202egnp.exe", "a\u2066b", "a\u200fb", "a\u061cb", "a\u202ab", "a\u2069b", "a\x00b"} {
		err := ValidateQueueName(name)
		if !errors.Is(err, ErrInvalidQueueName) {
			t.Errorf("%+q: want ErrInvalidQueueName, have %v", name, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\u202e\u2066\u200f\u061c\u202a\u2069\x00") {
			t.Errorf("%+q: the error holds the raw control: %q", name, err)
		}
	}
	for _, name := range []string{"שלום", "مرحبا", "emails-ü"} {
		if err := ValidateQueueName(name); err != nil {
			t.Errorf("%q: want valid, have %v", name, err)
		}
	}
}
