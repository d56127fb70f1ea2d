package scaler

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-dev/drover/internal/commalist"
)

// ErrBadMetadata is wrapped by every error of ParseSpec.
var ErrBadMetadata = errors.New("scaler: bad metadata")

// ErrNoQueues means a selection matched no known queue.
var ErrNoQueues = errors.New("scaler: the selection matches no queue")

// ErrUnknownQueue means a selection names a queue (a pattern without glob
// characters) that is not known: a misspelt name is refused rather than
// silently measured as nothing.
var ErrUnknownQueue = errors.New("scaler: the selection names unknown queues")

// Selection picks queues by name: each pattern is a queue name or a
// path.Match glob. The zero Selection matches nothing.
type Selection struct {
	patterns []string // sorted, deduplicated
}

// NewSelection validates the patterns and returns their selection.
func NewSelection(patterns ...string) (Selection, error) {
	var ps []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return Selection{}, fmt.Errorf("%w: pattern %q: %v", ErrBadMetadata, p, err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return Selection{}, fmt.Errorf("%w: no queue selected (want queues, prefix or glob)", ErrBadMetadata)
	}
	slices.Sort(ps)
	return Selection{patterns: slices.Compact(ps)}, nil
}

// Match reports whether the queue is selected.
func (s Selection) Match(queue string) bool {
	for _, p := range s.patterns {
		if ok, _ := path.Match(p, queue); ok {
			return true
		}
	}
	return false
}

// matchEach reports whether the queue is selected, and marks in seen
// (one flag per pattern, in order) every pattern that matches it.
func (s Selection) matchEach(queue string, seen []bool) bool {
	any := false
	for i, p := range s.patterns {
		if ok, _ := path.Match(p, queue); ok {
			seen[i], any = true, true
		}
	}
	return any
}

// names returns the patterns that are plain queue names (no glob
// characters).
func (s Selection) names() []string {
	var out []string
	for _, p := range s.patterns {
		if !strings.ContainsAny(p, `*?[\`) {
			out = append(out, p)
		}
	}
	return out
}

// String is the canonical form: the patterns, sorted, comma-separated. It
// labels the selection's gauges.
func (s Selection) String() string { return strings.Join(s.patterns, ",") }

// Spec is what one ScaledObject asks for, read from its trigger metadata.
type Spec struct {
	Selection Selection
	// TargetLag is the lag one worker is expected to keep up with
	// (metadata targetLag, default 100).
	TargetLag int64
	// ActivationLag: the selection is active (scale from zero) when its lag
	// is above this (metadata activationLag, default 0).
	ActivationLag int64
	// TargetOldestAge enables the second metric, oldest-age-seconds, with
	// this target per worker (metadata targetOldestAgeSeconds; default 0:
	// no second metric).
	TargetOldestAge time.Duration
}

// DefaultTargetLag is the target lag per worker when none is given.
const DefaultTargetLag = 100

// Metadata keys a ScaledObject's trigger may carry.
const (
	KeyQueues                 = "queues" // comma-separated names or globs
	KeyPrefix                 = "prefix" // comma-separated name prefixes
	KeyGlob                   = "glob"   // comma-separated globs
	KeyTargetLag              = "targetLag"
	KeyActivationLag          = "activationLag"
	KeyTargetOldestAgeSeconds = "targetOldestAgeSeconds"
	// KEDA passes the scaler's address and its TLS settings in the same
	// map; they are accepted and ignored.
	keyScalerAddress = "scalerAddress"
	keyCACert        = "caCert"
	keyTLSClientCert = "tlsClientCert"
	keyTLSClientKey  = "tlsClientKey"
	keyTLSSkipVerify = "unsafeSsl"
)

var knownKeys = []string{KeyQueues, KeyPrefix, KeyGlob, KeyTargetLag, KeyActivationLag, KeyTargetOldestAgeSeconds,
	keyScalerAddress, keyCACert, keyTLSClientCert, keyTLSClientKey, keyTLSSkipVerify}

// ParseSpec reads a trigger's metadata. Unknown keys, a missing selection
// and values that are not positive where they must be are errors wrapping
// ErrBadMetadata.
func ParseSpec(md map[string]string) (Spec, error) {
	var unknown []string
	for k := range md {
		if !slices.Contains(knownKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Spec{}, fmt.Errorf("%w: unknown keys %q (known: %s)", ErrBadMetadata, unknown, strings.Join(knownKeys[:6], ", "))
	}
	var patterns []string
	patterns = append(patterns, commalist.Split(md[KeyQueues])...)
	patterns = append(patterns, commalist.Split(md[KeyGlob])...)
	for _, p := range commalist.Split(md[KeyPrefix]) {
		patterns = append(patterns, p+"*")
	}
	sel, err := NewSelection(patterns...)
	if err != nil {
		return Spec{}, err
	}
	sp := Spec{Selection: sel, TargetLag: DefaultTargetLag}
	if v, ok := md[KeyTargetLag]; ok {
		if sp.TargetLag, err = parseInt(KeyTargetLag, v, 1); err != nil {
			return Spec{}, err
		}
	}
	if v, ok := md[KeyActivationLag]; ok {
		if sp.ActivationLag, err = parseInt(KeyActivationLag, v, 0); err != nil {
			return Spec{}, err
		}
	}
	if v, ok := md[KeyTargetOldestAgeSeconds]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 {
			return Spec{}, fmt.Errorf("%w: %s: want a number of seconds > 0, have %q", ErrBadMetadata, KeyTargetOldestAgeSeconds, v)
		}
		sp.TargetOldestAge = time.Duration(f * float64(time.Second))
	}
	return sp, nil
}

func parseInt(key, v string, least int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < least {
		return 0, fmt.Errorf("%w: %s: want a whole number ≥ %d, have %q", ErrBadMetadata, key, least, v)
	}
	return n, nil
}
