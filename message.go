package drover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// Position is a message's place in its queue's log: microseconds since the
// Unix epoch taken from the Redis server's clock, made strictly increasing per
// queue. Positions never go backwards, so an offset ("everything at or below
// this position is done") is safe, as in Kafka.
type Position int64

// Message is one task: the decoded envelope plus where it sits in the log.
//
// The envelope is a JSON object (docs/redis-schema.md). Fields Drover does
// not know are kept in Extra and written back unchanged, so that producers in
// other languages can carry their own metadata through retries and dead
// letters.
type Message struct {
	ID          string            // unique, sortable; or a caller-chosen idempotency key
	Queue       string            // the queue it was enqueued to
	Task        string            // the task name, routed by the queue's config
	Args        json.RawMessage   // any JSON; nil when absent
	Attempt     int               // 0 on the first run
	MaxAttempts int               // 0: the queue's default
	EnqueuedAt  time.Time         // when the producer enqueued it
	Headers     map[string]string // optional producer metadata
	Schedule    string            // the schedule that fired it, if any
	FireAt      time.Time         // the schedule slot it fired for, if any

	// Position is where the message sits in the queue's log. It is not part
	// of the envelope: reads fill it in.
	Position Position
	// Extra holds envelope fields Drover does not know, verbatim.
	Extra map[string]json.RawMessage
}

// envelope is the wire form of Message.
type envelope struct {
	ID          string          `json:"id"`
	Queue       string          `json:"queue"`
	Task        string          `json:"task"`
	Args        json.RawMessage `json:"args,omitempty"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	EnqueuedAt  time.Time       `json:"enqueued_at"`
	Headers     headerMap       `json:"headers,omitempty"`
	Schedule    string          `json:"schedule,omitempty"`
	FireAt      *time.Time      `json:"fire_at,omitempty"`
}

// knownFields are the envelope keys that map onto Message fields.
var knownFields = map[string]bool{
	"id": true, "queue": true, "task": true, "args": true, "attempt": true,
	"max_attempts": true, "enqueued_at": true, "headers": true,
	"schedule": true, "fire_at": true,
}

// MarshalJSON encodes the envelope, including the Extra fields.
func (m *Message) MarshalJSON() ([]byte, error) {
	e := envelope{
		ID: m.ID, Queue: m.Queue, Task: m.Task, Args: m.Args, Attempt: m.Attempt,
		MaxAttempts: m.MaxAttempts, EnqueuedAt: m.EnqueuedAt, Headers: m.Headers,
		Schedule: m.Schedule,
	}
	if !m.FireAt.IsZero() {
		t := m.FireAt
		e.FireAt = &t
	}
	b, err := json.Marshal(e)
	if err != nil || len(m.Extra) == 0 {
		return b, err
	}
	extra := make(map[string]json.RawMessage, len(m.Extra))
	for k, v := range m.Extra {
		if !knownFields[k] {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		return b, nil
	}
	eb, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	// Splice {"known":…} and {"extra":…} into one object.
	out := make([]byte, 0, len(b)+len(eb))
	out = append(out, b[:len(b)-1]...)
	out = append(out, ',')
	out = append(out, eb[1:]...)
	return out, nil
}

// UnmarshalJSON decodes an envelope; unknown fields go to Extra.
func (m *Message) UnmarshalJSON(data []byte) error {
	msg, err := DecodeMessage(data)
	if err != nil {
		return err
	}
	*m = *msg
	return nil
}

// DecodeMessage decodes an envelope. It never panics: anything that is not a
// JSON object with a non-empty string "id" and "task" returns an error
// wrapping ErrPoison that says what is wrong.
func DecodeMessage(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrPoison)
	}
	// The common case — exactly Drover's keys, each once, spelled as
	// written, valid UTF-8, nothing after the object — is decoded in one
	// pass by github.com/go-json-experiment/json (encoding/json v2), whose
	// strict defaults accept only such envelopes and which costs a fraction
	// of encoding/json's streaming Decoder (BenchmarkDecodeMessage). Any
	// envelope it refuses takes the encoding/json path below unchanged, so
	// what is accepted, what it decodes to and every error are as before
	// (TestDecodeMessageFastPathMatchesEncodingJSON, FuzzDecodeMessagePaths).
	var e envelope
	if jsonv2.Unmarshal(data, &e, strictEnvelope) != nil {
		return decodeMessageV1(data)
	}
	return messageOf(&e, false, data)
}

// strictEnvelope makes jsonv2 refuse keys that are not envelope fields (its
// defaults already refuse duplicate keys, other spellings and invalid UTF-8).
var strictEnvelope = jsonv2.RejectUnknownMembers(true)

// decodeMessageV1 is DecodeMessage through encoding/json: every envelope
// the fast path refuses, and the reference the tests compare it with.
func decodeMessageV1(data []byte) (*Message, error) {
	// One strict pass decodes an envelope without unknown keys. Only an
	// envelope with keys of its own pays for a second, lenient pass and a
	// third that collects the unknown keys.
	var e envelope
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	unknown := false
	if err := strict.Decode(&e); err != nil {
		if !strings.HasPrefix(err.Error(), "json: unknown field ") {
			return nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
		unknown = true
		e = envelope{}
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
	} else if strict.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrPoison)
	}
	return messageOf(&e, unknown, data)
}

// messageOf checks a decoded envelope and makes its Message; with unknown
// set it collects data's keys that are not envelope fields into Extra.
func messageOf(e *envelope, unknown bool, data []byte) (*Message, error) {
	if e.ID == "" {
		return nil, fmt.Errorf("%w: missing \"id\"", ErrPoison)
	}
	if e.Task == "" {
		return nil, fmt.Errorf("%w: missing \"task\"", ErrPoison)
	}
	if e.Attempt < 0 {
		return nil, fmt.Errorf("%w: negative \"attempt\"", ErrPoison)
	}
	m := &Message{
		ID: e.ID, Queue: e.Queue, Task: e.Task, Args: e.Args, Attempt: e.Attempt,
		MaxAttempts: e.MaxAttempts, EnqueuedAt: e.EnqueuedAt, Headers: map[string]string(e.Headers),
		Schedule: e.Schedule,
	}
	if e.FireAt != nil {
		m.FireAt = *e.FireAt
	}
	if len(m.Args) > 0 && bytes.Equal(m.Args, []byte("null")) {
		m.Args = nil
	}
	if unknown {
		var all map[string]json.RawMessage
		if err := json.Unmarshal(data, &all); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
		for k, v := range all {
			if !knownFields[k] {
				if m.Extra == nil {
					m.Extra = make(map[string]json.RawMessage)
				}
				m.Extra[k] = v
			}
		}
	}
	return m, nil
}

// Failure says why a message was dead-lettered.
type Failure struct {
	Reason     string    `json:"error"`                 // what went wrong, for people
	ExitCode   int       `json:"exit_code"`             // the task's exit code; -1 when killed or never run
	StderrTail string    `json:"stderr_tail,omitempty"` // the last bytes the task wrote to stderr
	FailedAt   time.Time `json:"failed_at"`
	// CancelledBy names the operator who cancelled the attempt while it
	// ran; empty when it ended on its own.
	CancelledBy string `json:"cancelled_by,omitempty"`
}

// DeadLetter is a message that will not be retried, with its failure.
// Raw holds the envelope as stored when it could not be decoded (Message is
// then nil).
type DeadLetter struct {
	ID      string
	Message *Message
	Raw     []byte
	Failure Failure
}
