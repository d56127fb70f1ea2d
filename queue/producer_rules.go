package queue

import (
	"math"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover"
)

// ProducerRules is what an enqueue accepts, written out as data for
// producers in other languages: tools/pyscripts serialises it into the
// Python client (python/drover/scripts/rules.json), which checks every
// message against it before writing anything. The Go producers enforce
// the same rules in code (drover.ValidateQueueName, Producer.Enqueue, the
// HTTP API's job decoding, ctl enqueue); the shared corpus
// python/tests/validation_cases.json is checked against both, so the data
// cannot drift from the code.
type ProducerRules struct {
	Queue       QueueNameRules   `json:"queue"`
	ID          IDRules          `json:"id"`
	Task        TaskRules        `json:"task"`
	MaxAttempts MaxAttemptsRules `json:"max_attempts"`
	Delay       DelayRules       `json:"delay"`
	// Exclusive lists fields that may not be given together: a delay and a
	// due time (the HTTP API's in/at, ctl's --in/--at).
	Exclusive [][2]string `json:"exclusive"`
}

// QueueNameRules is drover.ValidateQueueName as data.
type QueueNameRules struct {
	MaxBytes int      `json:"max_bytes"` // 1 to MaxBytes bytes of UTF-8
	Reserved []string `json:"reserved"`  // whole names refused
	// Forbidden are the code points refused anywhere in a name, as
	// inclusive ranges in ascending order.
	Forbidden [][2]rune `json:"forbidden"`
}

// IDRules: a caller-chosen id is at most MaxBytes bytes of UTF-8 without
// the Forbidden code points (control characters and bidirectional
// controls: CheckID); an empty id means "generate one".
type IDRules struct {
	MaxBytes  int       `json:"max_bytes"`
	Forbidden [][2]rune `json:"forbidden"` // inclusive ranges, ascending
}

// TaskRules: the task name is required.
type TaskRules struct {
	MinBytes int `json:"min_bytes"`
}

// MaxAttemptsRules: an integer from Min (0: the queue's default) to Max,
// the largest value the envelope's integer field decodes.
type MaxAttemptsRules struct {
	Min int   `json:"min"`
	Max int64 `json:"max"`
}

// DelayRules: a delay is a finite number of seconds from MinSeconds to
// MaxSeconds (time.Duration's range, the longest EnqueueIn takes).
type DelayRules struct {
	MinSeconds float64 `json:"min_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
}

// Rules returns the producer rules. The forbidden code points of a queue
// name are found by asking drover.ValidateQueueName about every code point,
// so they are the validator's answer, not a copy of it; this costs some
// tens of milliseconds, for the generator and tests.
func Rules() ProducerRules {
	return ProducerRules{
		Queue: QueueNameRules{
			MaxBytes:  drover.MaxQueueNameLen,
			Reserved:  drover.ReservedQueueNames(),
			Forbidden: forbiddenQueueNameRunes(),
		},
		ID:          IDRules{MaxBytes: MaxIDLen, Forbidden: forbiddenRunes(func(r rune) bool { return CheckID("a"+string(r)) == nil })},
		Task:        TaskRules{MinBytes: 1},
		MaxAttempts: MaxAttemptsRules{Min: 0, Max: math.MaxInt},
		Delay:       DelayRules{MinSeconds: 0, MaxSeconds: time.Duration(math.MaxInt64).Seconds()},
		Exclusive:   [][2]string{{"delay", "due"}},
	}
}

// forbiddenQueueNameRunes are the code points ValidateQueueName refuses
// inside an otherwise valid name, as ranges. Surrogates are left out: no
// UTF-8 string holds them (a producer refuses them as invalid text).
func forbiddenQueueNameRunes() [][2]rune {
	return forbiddenRunes(func(r rune) bool { return drover.ValidateQueueName("a"+string(r)) == nil })
}

// forbiddenRunes are the code points that allowed does not allow, as
// ranges; surrogates are left out.
func forbiddenRunes(allowed func(rune) bool) [][2]rune {
	var out [][2]rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if allowed(r) {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == r-1 {
			out[n-1][1] = r
			continue
		}
		out = append(out, [2]rune{r, r})
	}
	return out
}
