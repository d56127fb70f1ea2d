package drover

import (
	"encoding/json"
	"reflect"
	"testing"
)

// checkHeaderMap holds headerMap's decoder to encoding/json's: the same map
// for every input json.Unmarshal accepts, an error for every input it
// refuses.
func checkHeaderMap(t *testing.T, in string) {
	t.Helper()
	if !json.Valid([]byte(in)) {
		return // the envelope decoder never hands over invalid JSON
	}
	var want map[string]string
	wantErr := json.Unmarshal([]byte(in), &want)
	var have headerMap
	haveErr := have.UnmarshalJSON([]byte(in))
	if (wantErr == nil) != (haveErr == nil) {
		t.Fatalf("%q: want error %v, have %v", in, wantErr, haveErr)
	}
	if wantErr == nil && !reflect.DeepEqual(map[string]string(have), want) {
		t.Fatalf("%q: want %#v, have %#v", in, want, map[string]string(have))
	}
}

var headerSeeds = []string{
	`{}`, ` { } `, `null`, `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
	`{"a":"1","b":"2"}`, `{ "a" : "1" , "b" : "2" }`, `{"a":"1","a":"2"}`, `{"a":"\n"}`, `{"a":"\u00e9"}`,
	`{"é":"ü"}`, `{"a":1}`, `{"a":null}`, `{"a":{"b":"c"}}`, `{"a":["b"]}`, `["a"]`, `"a"`, `{"a":"b\"c"}`,
	"{\"a\":\"\xff\"}", `{"":""}`, `{"a":true}`,
}

func TestHeaderMapDecodesLikeEncodingJSON(t *testing.T) {
	for _, in := range headerSeeds {
		checkHeaderMap(t, in)
	}
}

func FuzzHeaderMap(f *testing.F) {
	for _, s := range headerSeeds {
		f.Add(s)
	}
	f.Fuzz(checkHeaderMap)
}
