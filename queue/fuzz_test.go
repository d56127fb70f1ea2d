package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/drover-dev/drover"
)

// FuzzDecodeEnvelope: decoding any bytes never panics; what does not decode
// is poison; what decodes survives a round trip (unknown fields included).
// The seeds run as a normal test.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"id":"01J","queue":"q","task":"t","args":{"a":[1,2]},"attempt":0,"enqueued_at":"2025-01-01T00:00:00Z"}`,
		`{"id":"x","task":"t","attempt":3,"max_attempts":9,"headers":{"k":"v"},"schedule":"s","fire_at":"2025-01-01T00:00:00Z","extra":{"n":1}}`,
		`{"id":"x","task":"t","args":null}`,
		`{"id":"x","task":"t","trace":"a","z":[true,null]}`,
		`{"id":"x","task":"t","attempt":-1}`,
		`{"id":"","task":"t"}`,
		`{"id":"x"}`,
		`{"id":1,"task":"t"}`,
		`{"id":"x","task":"t","enqueued_at":"yesterday"}`,
		`{"id":"x","task":"t"`,
		`{"id":"x","task":"t"} trailing`,
		`[1,2,3]`,
		`"string"`,
		`null`,
		``,
		"\xff\xfe{",
		`  {"id":"x","task":"t","id":"y"}  `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e := Entry{Queue: "q", Position: 7, ID: "x", Raw: raw}
		m, err := e.Decode()
		if err != nil {
			var pe *PoisonError
			if m != nil || !errors.Is(err, drover.ErrPoison) || !errors.As(err, &pe) || pe.ID != "x" {
				t.Fatalf("Decode(%q): want a *PoisonError for x matching ErrPoison, have %v, %v", raw, m, err)
			}
			return
		}
		if m.ID != "x" || m.Position != 7 || m.Task == "" || m.Queue == "" {
			t.Fatalf("Decode(%q) = %+v: want id x, position 7, a task and a queue", raw, m)
		}
		enc, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m, err)
		}
		again, err := (&Entry{Queue: "q", Position: 7, ID: "x", Raw: enc}).Decode()
		if err != nil {
			t.Fatalf("decode of re-encoded %s: %v", enc, err)
		}
		if !sameMessage(m, again) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, again)
		}
		// The enqueue path's encoder agrees with MarshalJSON.
		fast, err := encodeEnvelope(m)
		if err != nil {
			t.Fatalf("encodeEnvelope(%+v): %v", m, err)
		}
		viaFast, err := (&Entry{Queue: "q", Position: 7, ID: "x", Raw: fast}).Decode()
		if err != nil {
			t.Fatalf("decode of encodeEnvelope's %s: %v", fast, err)
		}
		if !sameMessage(m, viaFast) {
			t.Fatalf("encodeEnvelope changed the message:\n%+v\n%+v\n%s", m, viaFast, fast)
		}
	})
}

// sameMessage compares messages, JSON values by their compact form.
func sameMessage(a, b *drover.Message) bool {
	if a.ID != b.ID || a.Queue != b.Queue || a.Task != b.Task || a.Attempt != b.Attempt ||
		a.MaxAttempts != b.MaxAttempts || !a.EnqueuedAt.Equal(b.EnqueuedAt) || !a.FireAt.Equal(b.FireAt) ||
		a.Schedule != b.Schedule || a.Position != b.Position || !reflect.DeepEqual(emptyNil(a.Headers), emptyNil(b.Headers)) ||
		!sameJSON(a.Args, b.Args) || len(a.Extra) != len(b.Extra) {
		return false
	}
	for k, v := range a.Extra {
		if !sameJSON(v, b.Extra[k]) {
			return false
		}
	}
	return true
}

func emptyNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// sameJSON compares JSON values by meaning (encoding/json may re-escape
// strings, e.g. "&" as "\u0026").
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}
