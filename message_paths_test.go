package drover

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// envelopeCases are envelopes the fast path accepts and ones it must hand
// to encoding/json (other spellings, duplicates, unknown keys, invalid
// UTF-8, trailing data, wrong types), with the poison cases of
// TestDecodeMessageRejectsPoisonWithAReason.
var envelopeCases = []string{
	`{"id":"a","queue":"q","task":"t","attempt":0,"enqueued_at":"2026-11-24T02:41:42.123456789Z"}`,
	`{"id":"a","queue":"q","task":"t","args":{"x":[1,2,{"y":null}]},"attempt":3,"max_attempts":5,"enqueued_at":"2026-11-24T02:41:42+02:00","headers":{"traceparent":"00-ab"},"schedule":"nightly","fire_at":"2026-11-24T00:00:00Z"}`,
	` {"id":"a","task":"t","args":null,"headers":null,"fire_at":null} `,
	`{"id":"a","task":"t","args": [ 1 , 2 ] }`,
	`{"id":"a\u00e9\n","task":"t\"q","headers":{"k\\":"v\u0000"}}`,
	`{"ID":"a","Task":"t"}`,
	`{"id":"a","task":"t","id":"b"}`,
	`{"id":"a","task":"t","trace":{"span":"x"},"lang":"py"}`,
	"{\"id\":\"a\xff\",\"task\":\"t\"}",
	`{"id":"a","task":"t"} x`,
	`{"id":"a","task":"t"}{}`,
	`{"id":1,"task":"t"}`,
	`{"id":"a","task":"t","attempt":1.5}`,
	`{"id":"a","task":"t","attempt":"1"}`,
	`{"id":"a","task":"t","attempt":-1}`,
	`{"id":"a","task":"t","attempt":null}`,
	`{"id":"a","task":"t","enqueued_at":"yesterday"}`,
	`{"id":"a","task":"t","enqueued_at":"2026-11-24 02:41:42Z"}`,
	`{"id":"a","task":"t","enqueued_at":"2026-11-24T24:00:00Z"}`,
	`{"id":"a","task":"t","enqueued_at":"2026-11-24t02:41:42z"}`,
	`{"id":"a","task":"t","headers":{"k":1}}`,
	`{"id":"a","task":"t","headers":[]}`,
	`{"id":"a","task":"t","x":`,
	`{"id":"a"}`, `{"task":"t"}`, `{"id":"","task":"t"}`, `{}`, `{`, `[]`, ``, `null`,
}

// TestDecodeMessageFastPathMatchesEncodingJSON: DecodeMessage (the jsonv2
// fast path with its encoding/json fallback) gives what encoding/json alone
// gives — the same message or the same error — for every case.
func TestDecodeMessageFastPathMatchesEncodingJSON(t *testing.T) {
	for _, in := range envelopeCases {
		checkDecodePaths(t, []byte(in))
	}
}

// TestDecodeMessageGivesTheSameErrorsAsBefore pins the reasons a dead letter
// carries for common poison, word for word.
func TestDecodeMessageGivesTheSameErrorsAsBefore(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                                 "drover: undecodable envelope: not a JSON object",
		`{"id":"a"}`:                         `drover: undecodable envelope: missing "task"`,
		`{"task":"t"}`:                       `drover: undecodable envelope: missing "id"`,
		`{"id":"a","task":"t"} x`:            "drover: undecodable envelope: data after the JSON object",
		`{"id":"a","task":"t","attempt":-1}`: `drover: undecodable envelope: negative "attempt"`,
		`{"id":1,"task":"t"}`:                "drover: undecodable envelope: json: cannot unmarshal number into Go struct field envelope.id of type string",
		`{"id":"a","task":"t","x":`:          "drover: undecodable envelope: unexpected EOF",
	} {
		_, err := DecodeMessage([]byte(in))
		if err == nil || !errors.Is(err, ErrPoison) || err.Error() != want {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func checkDecodePaths(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := DecodeMessage(data)
	want, wantErr := decodeMessageV1(bytes.TrimSpace(data))
	if len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
		want, wantErr = nil, errors.New("drover: undecodable envelope: not a JSON object")
	}
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%q: error %v, encoding/json gives %v", data, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	gb, err := got.MarshalJSON()
	if err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	wb, _ := want.MarshalJSON()
	if !bytes.Equal(gb, wb) || !reflect.DeepEqual(got.Args, want.Args) || !reflect.DeepEqual(got.Headers, want.Headers) ||
		!reflect.DeepEqual(got.Extra, want.Extra) || got.EnqueuedAt.Location().String() != want.EnqueuedAt.Location().String() {
		t.Fatalf("%q: decoded %#v, encoding/json gives %#v", data, got, want)
	}
}

func FuzzDecodeMessagePaths(f *testing.F) {
	for _, in := range envelopeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecodePaths(t, data) })
}

func BenchmarkDecodeMessage(b *testing.B) {
	env := []byte(`{"id":"01JDQ4Z7X9Y8W7V6U5T4S3R2Q1","queue":"bench","task":"bench.noop","attempt":0,"enqueued_at":"2026-11-24T02:41:42.123456789Z"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeMessage(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeMessageV1(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
