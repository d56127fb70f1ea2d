package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// The hand-written frame encoders must write what encoding/json would
// (as JSON values), and the v2 fast paths of the decoders must accept and
// decode what encoding/json does.

// frameStrings are values that exercise JSON string quoting.
var frameStrings = []string{"", "plain", `quote " and \ backslash`, "tab\tnewline\n", "<html> & ünïcödé ✓",
	"\x00\x1f control", "invalid \xff utf-8", "emoji 😀"}

func TestAppendTaskFrameWritesWhatEncodingJSONWould(t *testing.T) {
	t.Parallel()
	env := []byte(`{"id":"m1","task":"t","args":{"x":[1,2]},"extra":"kept"}`)
	for _, s := range frameStrings {
		f := taskFrame{Type: frameTask, Seq: 1<<64 - 1, Queue: s, Task: s, ID: s, Attempt: -3, Position: 1735787045123456,
			Deadline: s, Traceparent: s, Tracestate: s, Envelope: env}
		want, err := json.Marshal(&f)
		if err != nil {
			t.Fatal(err)
		}
		b := appendTaskFrame([]byte("prefix"), &f, env)
		if !strings.HasPrefix(string(b), "prefix") {
			t.Fatalf("want the frame appended after the prefix, have %q", b)
		}
		body, err := readFrame(strings.NewReader(string(b[len("prefix"):])), nil, 1<<20)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		assertSameJSON(t, want, body)
		var back taskFrame
		if err := decodeTaskFrame(body, &back); err != nil {
			t.Fatalf("%q: decode %s: %v", s, body, err)
		}
		var viaV1 taskFrame
		if err := json.Unmarshal(body, &viaV1); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, viaV1) {
			t.Errorf("%q: want the frame encoding/json reads %+v, have %+v", s, viaV1, back)
		}
	}
	// Empty optional fields are left out, as their omitempty tags say.
	f := taskFrame{Type: frameTask, Seq: 2, Queue: "q", Task: "t", ID: "m"}
	want, _ := json.Marshal(&f)
	body, _ := readFrame(strings.NewReader(string(appendTaskFrame(nil, &f, nil))), nil, 1<<20)
	assertSameJSON(t, want, body)
}

func TestAppendResultFrameWritesWhatEncodingJSONWould(t *testing.T) {
	t.Parallel()
	for _, s := range frameStrings {
		r := resultFrame{Type: frameResult, Seq: 7, Outcome: wireFailure, Message: s}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		body, err := readFrame(strings.NewReader(string(appendResultFrame(nil, &r))), nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, want, body)
	}
}

func TestDecodeResultAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"as written by the children", `{"type":"result","seq":3,"outcome":"success"}`, true},
		{"with a message", `{"type":"result","seq":3,"outcome":"retry","message":"busy ✓"}`, true},
		{"spaces and another order", ` { "outcome" : "failure", "seq" : 3, "type" : "result" } `, true},
		{"keys in another case", `{"Type":"result","SEQ":3,"Outcome":"timeout"}`, true},
		{"unknown keys", `{"type":"result","seq":3,"outcome":"success","took_ms":12}`, true},
		{"a duplicate key", `{"type":"result","seq":3,"outcome":"failure","outcome":"success"}`, true},
		{"invalid UTF-8 in the message", "{\"type\":\"result\",\"seq\":3,\"outcome\":\"failure\",\"message\":\"\xff\"}", true},
		{"another seq", `{"type":"result","seq":4,"outcome":"success"}`, false},
		{"a seq with a leading zero", `{"type":"result","seq":03,"outcome":"success"}`, false},
		{"a negative seq", `{"type":"result","seq":-3,"outcome":"success"}`, false},
		{"trailing bytes", `{"type":"result","seq":3,"outcome":"success"}x`, false},
		{"another type", `{"type":"ready","seq":3,"outcome":"success"}`, false},
		{"unknown outcome", `{"type":"result","seq":3,"outcome":"meh"}`, false},
		{"not JSON", `{"type":"result",`, false},
		{"seq as a string", `{"type":"result","seq":"3","outcome":"success"}`, false},
	}
	for _, tt := range tests {
		have, err := decodeResult([]byte(tt.body), 3)
		if (err == nil) != tt.ok {
			t.Errorf("%s: want ok %v, have error %v", tt.name, tt.ok, err)
			continue
		}
		if !tt.ok {
			continue
		}
		var want resultFrame
		if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
			t.Fatal(err)
		}
		if have != want {
			t.Errorf("%s: want %+v (encoding/json), have %+v", tt.name, want, have)
		}
	}
}

func TestDecodeTaskFrameReadsOtherFramesAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	// appendTaskFrame's output and frames written otherwise come out as
	// encoding/json reads them.
	plain := taskFrame{Type: frameTask, Seq: 12, Queue: "q", Task: "t", ID: "m1", Attempt: 2, Position: -5,
		Deadline: "2026-01-01T00:00:00Z", Traceparent: "00-ab-cd-01"}
	body, _ := readFrame(strings.NewReader(string(appendTaskFrame(nil, &plain, []byte(` {"id":"m1"} `)))), nil, 1<<20)
	for _, frame := range []string{
		string(body),
		`{"seq":12,"type":"task","queue":"q","task":"t","id":"m1","attempt":2,"position":-5,"envelope":{"id":"m1"}}`,
		`{ "type" : "task", "seq" : 12, "queue":"q","task":"t","id":"m1","attempt":2,"position":-5,"envelope":{"id":"m1"} }`,
		`{"type":"task","seq":12,"queue":"q\u0041","task":"t","id":"m1","attempt":2,"position":-5,"envelope":{"id":"m1"}}`,
		`{"type":"task","seq":12,"queue":"ü","task":"t","id":"m1","attempt":2,"position":-5,"envelope":{"id":"m1"}}`,
		`{"type":"task","seq":12,"queue":"q","task":"t","id":"m1","attempt":2,"position":-5,"tracestate":"x=1","envelope":{"id":"m1"}}`,
		`{"type":"task","seq":12,"queue":"q","task":"t","id":"m1","attempt":2,"position":-5,"envelope":{"id":"m1"},"extra":1}`,
	} {
		var have, want taskFrame
		if err := json.Unmarshal([]byte(frame), &want); err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		if err := decodeTaskFrame([]byte(frame), &have); err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		if !reflect.DeepEqual(have, want) {
			t.Errorf("%s:\nwant %+v (encoding/json)\nhave %+v", frame, want, have)
		}
	}
}

func TestDecodeTaskFrameTakesEveryEnvelopeTheWorkerTakes(t *testing.T) {
	t.Parallel()
	// The worker's envelope decoder accepts duplicate keys and invalid
	// UTF-8 (through encoding/json); the frame must carry them to the
	// child unchanged.
	for _, env := range []string{
		`{"id":"m1","task":"t","args":{}}`,
		"{\"id\":\"m1\",\"task\":\"t\",\"args\":\"\xff\"}",
		`{"id":"m1","task":"t","args":{"a":1,"a":2}}`,
	} {
		f := taskFrame{Type: frameTask, Seq: 1, Queue: "q", Task: "t", ID: "m1"}
		body, err := readFrame(strings.NewReader(string(appendTaskFrame(nil, &f, []byte(env)))), nil, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var back taskFrame
		if err := decodeTaskFrame(body, &back); err != nil {
			t.Fatalf("envelope %q: %v", env, err)
		}
		if string(back.Envelope) != env || back.Type != frameTask || back.Seq != 1 {
			t.Errorf("want envelope %q back with the fields, have %+v", env, back)
		}
	}
}

// assertSameJSON fails unless want and have decode to the same value.
func assertSameJSON(t *testing.T, want, have []byte) {
	t.Helper()
	var w, h any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if err := json.Unmarshal(have, &h); err != nil {
		t.Fatalf("have %s: %v", have, err)
	}
	if !reflect.DeepEqual(w, h) {
		t.Errorf("want %s, have %s", want, have)
	}
}

// poolTermHandler is the handler of TestGoPoolServerVerdicts: it announces
// its start on termStarted, waits for its context to end, then — when its
// args say "late" — until its deadline has passed, and returns the
// context's error.
const poolTermHandler = "pool-test-term"

var termStarted = make(chan struct{}, 1)

func init() {
	drover.Register(poolTermHandler, func(ctx context.Context, m *drover.Message) error {
		termStarted <- struct{}{}
		<-ctx.Done()
		if string(m.Args) == `"late"` {
			deadline, _ := ctx.Deadline()
			<-time.After(time.Until(deadline)) // the condition under test: returning after the deadline
		}
		return fmt.Errorf("gave up: %w", ctx.Err())
	})
}

// TestGoPoolServerVerdicts runs the Go child's serve in process: an error
// after the deadline is a timeout, after SIGTERM a failure — unless the
// deadline too passed before the handler returned.
func TestGoPoolServerVerdicts(t *testing.T) {
	serve := func(args string, deadline time.Time, term bool) resultFrame {
		env, _ := json.Marshal(&drover.Message{ID: "m1", Task: poolTermHandler, Args: json.RawMessage(args)})
		f := taskFrame{Type: frameTask, Seq: 5, Envelope: env}
		if !deadline.IsZero() {
			f.Deadline = deadline.Format(time.RFC3339Nano)
		}
		s := &goPoolServer{}
		done := make(chan resultFrame, 1)
		go func() { done <- s.serve(&f) }()
		<-termStarted
		if term {
			s.terminate() // as on SIGTERM: a task runs, so it cancels instead of exiting
		}
		return <-done
	}
	if r := serve(`"now"`, time.Now().Add(100*time.Millisecond), false); r.Outcome != wireTimeout || r.Seq != 5 {
		t.Errorf("error at the deadline: want a timeout for seq 5, have %+v", r)
	}
	if r := serve(`"now"`, time.Now().Add(time.Hour), true); r.Outcome != wireFailure || !strings.Contains(r.Message, "context canceled") {
		t.Errorf("error after SIGTERM, before the deadline: want a failure, have %+v", r)
	}
	if r := serve(`"late"`, time.Now().Add(100*time.Millisecond), true); r.Outcome != wireTimeout {
		t.Errorf("SIGTERM, then the deadline passed before the handler returned: want a timeout, have %+v", r)
	}
	if r := serve(`"now"`, time.Time{}, true); r.Outcome != wireFailure {
		t.Errorf("no deadline, SIGTERM: want a failure, have %+v", r)
	}
}
