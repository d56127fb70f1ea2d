package queue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// encodeEnvelope and Message.MarshalJSON decode to the same message, for
// messages with every field, odd strings and odd times.
func TestEncodeEnvelopeMatchesMarshalJSON(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 30, 0, 123456789, time.FixedZone("x", 5*3600+30*60))
	odd := "quote\" back\\ nl\n tab\t ctl\x01 <html>&amp; \u2028\u2029 bad\xff utf8 é 日本"
	cases := []*drover.Message{
		{ID: "a", Queue: "q", Task: "t", EnqueuedAt: at},
		{ID: odd, Queue: "q", Task: odd, Args: json.RawMessage(" { \"a\" : [1, 2,\n3] } "), Attempt: 3, MaxAttempts: 7,
			EnqueuedAt: at.UTC(), Headers: map[string]string{"z": odd, "a": "1", odd: "k"}, Schedule: "s:1", FireAt: at},
		{ID: "n", Queue: "q", Task: "t", Args: json.RawMessage("null"), EnqueuedAt: time.Unix(0, 0)},
		{ID: "e", Queue: "q", Task: "t", Extra: map[string]json.RawMessage{"trace": json.RawMessage(`"x"`)}, EnqueuedAt: at},
		{ID: "y", Queue: "q", Task: "t", EnqueuedAt: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for i, m := range cases {
		want, wantErr := m.MarshalJSON()
		have, haveErr := encodeEnvelope(m)
		if (wantErr != nil) != (haveErr != nil) {
			t.Fatalf("case %d: MarshalJSON error %v, encodeEnvelope error %v", i, wantErr, haveErr)
		}
		if wantErr != nil {
			continue
		}
		wm, err := drover.DecodeMessage(want)
		if err != nil {
			t.Fatalf("case %d: decode MarshalJSON's %s: %v", i, want, err)
		}
		hm, err := drover.DecodeMessage(have)
		if err != nil {
			t.Fatalf("case %d: decode encodeEnvelope's %s: %v", i, have, err)
		}
		if !sameMessage(wm, hm) {
			t.Fatalf("case %d:\nMarshalJSON   %s\nencodeEnvelope %s", i, want, have)
		}
	}
	if _, err := encodeEnvelope(&drover.Message{ID: "b", Queue: "q", Task: "t", Args: json.RawMessage("{bad")}); err == nil {
		t.Fatalf("invalid args: want an error")
	}
}
