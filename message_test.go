package drover

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeMessageKeepsUnknownFieldsThroughARoundTrip(t *testing.T) {
	in := `{"id":"a","queue":"q","task":"t","attempt":2,"trace":{"span":"x"},"lang":"py"}`
	m, err := DecodeMessage([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.Attempt != 2 || string(m.Extra["trace"]) != `{"span":"x"}` || string(m.Extra["lang"]) != `"py"` {
		t.Fatalf("decoded %+v", m)
	}
	out, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if string(back["trace"]) != `{"span":"x"}` || string(back["lang"]) != `"py"` || string(back["attempt"]) != "2" {
		t.Fatalf("round trip lost fields: %s", out)
	}
}

func TestDecodeMessageRejectsPoisonWithAReason(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"id":"a"}`, `{"task":"t"}`, `{"id":"a","task":"t"} x`, `{"id":1,"task":"t"}`, `{"id":"a","task":"t","attempt":-1}`, `{"id":"a","task":"t","x":`} {
		if _, err := DecodeMessage([]byte(in)); !errors.Is(err, ErrPoison) {
			t.Errorf("%q: want an error wrapping ErrPoison, have %v", in, err)
		}
	}
}
