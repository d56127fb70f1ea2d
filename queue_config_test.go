package drover

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// NaN passes every comparison, so a range check let it through to the
// JSON encoder ("json: unsupported value: NaN"); Validate names the field.
func TestValidateRefusesNaN(t *testing.T) {
	for field, c := range map[string]QueueConfig{
		"rate_limit.per_second": {Name: "q", RateLimit: RateLimit{PerSecond: math.NaN()}},
		"backoff.jitter":        {Name: "q", Backoff: Backoff{Jitter: math.NaN()}},
	} {
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s NaN: want ErrInvalidConfig naming %s, have %v", field, field, err)
		}
	}
	if err := (QueueConfig{Name: "q", RateLimit: RateLimit{PerSecond: math.Inf(1)}}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("rate_limit.per_second +Inf: want ErrInvalidConfig, have %v", err)
	}
}
