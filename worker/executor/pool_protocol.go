package executor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The pool protocol between the worker and a pooled child
// (docs/process-pool.md is the reference for other languages): frames of a
// 4-byte big-endian length and a JSON object, tasks on the child's fd 3,
// the ready frame and results on its fd 4.

// Descriptors and environment of a pooled child.
const (
	poolTaskFD   = 3 // worker → child: task frames
	poolResultFD = 4 // child → worker: the ready frame, then results
	// EnvPoolProtocol marks a pooled child and carries the protocol version.
	EnvPoolProtocol = "DROVER_POOL_PROTOCOL"
	poolProtocol    = 1
	// maxChildFrame bounds a frame from a child; anything larger is taken
	// for garbage on the descriptor.
	maxChildFrame = 16 << 20
)

// Frame types.
const (
	frameReady  = "ready"
	frameTask   = "task"
	frameResult = "result"
)

// Outcomes a child may report.
const (
	wireSuccess = "success"
	wireRetry   = "retry"
	wireFailure = "failure"
	wireTimeout = "timeout"
)

// readyFrame is the child's first frame.
type readyFrame struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
}

// taskFrame is one task sent to a child: the fields per-task mode puts in
// the environment, and the envelope.
type taskFrame struct {
	Type     string `json:"type"`
	Seq      uint64 `json:"seq"`
	Queue    string `json:"queue"`
	Task     string `json:"task"`
	ID       string `json:"id"`
	Attempt  int    `json:"attempt"`
	Position int64  `json:"position"`
	Deadline string `json:"deadline,omitempty"` // RFC 3339 with nanoseconds
	// Traceparent and Tracestate are the task span's W3C trace context,
	// which per-task mode puts in TRACEPARENT and TRACESTATE; empty when
	// the task is not traced.
	Traceparent string         `json:"traceparent,omitempty"`
	Tracestate  string         `json:"tracestate,omitempty"`
	Envelope    jsontext.Value `json:"envelope"`
}

// resultFrame is a child's answer to one task.
type resultFrame struct {
	Type    string `json:"type"`
	Seq     uint64 `json:"seq"`
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
}

// errProtocol marks a frame that breaks the protocol.
var errProtocol = errors.New("protocol violation")

// appendFrame appends the frame of v (length, then JSON) to dst.
func appendFrame(dst []byte, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...), nil
}

// appendTaskFrame appends the frame of f with envelope as its "envelope"
// field, written as it is: the envelope is valid JSON (the queue loop
// decoded it), and re-encoding it would cost more than the rest of the
// frame. The other fields are written by hand, in the order and with the
// omissions of taskFrame's tags: a reflective encoder cost a sixth of the
// worker's CPU per pooled task (docs/decisions.md, "Pooled Go children
// end to end"). Strings are quoted as JSON (invalid UTF-8 becomes U+FFFD,
// as encoding/json does).
func appendTaskFrame(dst []byte, f *taskFrame, envelope []byte) []byte {
	dst, start := appendFrameHead(dst, f.Type, f.Seq)
	dst = append(dst, `,"queue":`...)
	dst = appendJSONString(dst, f.Queue)
	dst = append(dst, `,"task":`...)
	dst = appendJSONString(dst, f.Task)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, f.ID)
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(f.Attempt), 10)
	dst = append(dst, `,"position":`...)
	dst = strconv.AppendInt(dst, f.Position, 10)
	dst = appendOmitEmpty(dst, `,"deadline":`, f.Deadline)
	dst = appendOmitEmpty(dst, `,"traceparent":`, f.Traceparent)
	dst = appendOmitEmpty(dst, `,"tracestate":`, f.Tracestate)
	dst = append(dst, `,"envelope":`...)
	if len(envelope) == 0 {
		dst = append(dst, "null"...)
	}
	dst = append(dst, envelope...)
	return appendFrameTail(dst, start)
}

// appendResultFrame appends the frame of r, written by hand like
// appendTaskFrame: a Go child sends one per task.
func appendResultFrame(dst []byte, r *resultFrame) []byte {
	dst, start := appendFrameHead(dst, r.Type, r.Seq)
	dst = append(dst, `,"outcome":`...)
	dst = appendJSONString(dst, r.Outcome)
	dst = appendOmitEmpty(dst, `,"message":`, r.Message)
	return appendFrameTail(dst, start)
}

// appendFrameHead begins a hand-written frame: room for its length, then
// the JSON object's type and seq. start is where the frame begins, for
// appendFrameTail.
func appendFrameHead(dst []byte, typ string, seq uint64) (_ []byte, start int) {
	start = len(dst)
	dst = append(dst, 0, 0, 0, 0) // the length, filled in by appendFrameTail
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, typ)
	dst = append(dst, `,"seq":`...)
	return strconv.AppendUint(dst, seq, 10), start
}

// appendFrameTail ends the frame begun at start: it closes the JSON object
// and writes the length.
func appendFrameTail(dst []byte, start int) []byte {
	dst = append(dst, '}')
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// appendOmitEmpty appends key (`,"name":`) and s as a JSON string, or
// nothing when s is empty: a field tagged omitempty.
func appendOmitEmpty(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendJSONString(dst, s)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD (the error that reports it is dropped, as encoding/json does).
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			dst, _ = jsontext.AppendQuote(dst, s)
			return dst
		}
	}
	// Printable ASCII without quote or backslash stands as it is: the
	// common queue name, task name, id and deadline.
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// readFrame reads one frame's JSON body from r into buf (grown as needed)
// and returns it. io.EOF means r ended cleanly between frames; a frame
// longer than limit, or one cut short, is an error wrapping errProtocol.
func readFrame(r io.Reader, buf []byte, limit int) ([]byte, error) {
	var head [4]byte
	if n, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %d stray bytes %q and then end of file", errProtocol, n, head[:n])
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if int64(n) > int64(limit) {
		return nil, fmt.Errorf("%w: frame length %d exceeds %d bytes (garbage on the protocol descriptor? first bytes %q)",
			errProtocol, n, limit, head[:])
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: frame of %d bytes cut short: %v", errProtocol, n, err)
	}
	return buf, nil
}

// decodeResult parses a result frame for task seq.
func decodeResult(body []byte, seq uint64) (resultFrame, error) {
	if f, ok := plainResult(body, seq); ok {
		return f, nil
	}
	var f resultFrame
	// The frame as a child should write it — exactly these keys, each
	// once, spelled as here, valid UTF-8 — decodes in one strict pass of
	// encoding/json v2 (github.com/go-json-experiment/json, already the
	// envelope's decoder). Anything else takes encoding/json as before, so
	// what is accepted and every error stay the same.
	if jsonv2.Unmarshal(body, &f, strictFrame) != nil {
		f = resultFrame{}
		if err := json.Unmarshal(body, &f); err != nil {
			return f, fmt.Errorf("%w: not a JSON frame: %v (%q)", errProtocol, err, clip(body, 80))
		}
	}
	switch {
	case f.Type != frameResult:
		return f, fmt.Errorf("%w: want a %q frame, have type %q", errProtocol, frameResult, f.Type)
	case f.Seq != seq:
		return f, fmt.Errorf("%w: result for task seq %d, but seq %d is running", errProtocol, f.Seq, seq)
	}
	switch f.Outcome {
	case wireSuccess, wireRetry, wireFailure, wireTimeout:
		return f, nil
	}
	return f, fmt.Errorf("%w: unknown outcome %q", errProtocol, f.Outcome)
}

// plainResult recognises the result frame as the Go child writes it for a
// task that succeeded — {"type":"result","seq":<seq>,"outcome":"success"},
// byte for byte — without a JSON decoder. Anything else is for
// decodeResult's decoders.
func plainResult(body []byte, seq uint64) (resultFrame, bool) {
	const head, tail = `{"type":"result","seq":`, `,"outcome":"success"}`
	b, ok := bytes.CutPrefix(body, []byte(head))
	if !ok {
		return resultFrame{}, false
	}
	if b, ok = bytes.CutSuffix(b, []byte(tail)); !ok || len(b) == 0 || len(b) > 20 || (len(b) > 1 && b[0] == '0') {
		return resultFrame{}, false
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || n != seq {
		return resultFrame{}, false // decodeResult says what is wrong
	}
	return resultFrame{Type: frameResult, Seq: n, Outcome: wireSuccess}, true
}

// strictFrame makes jsonv2 refuse what encoding/json would read
// differently: keys of another spelling or case (it reads them as unknown).
var strictFrame = jsonv2.RejectUnknownMembers(true)

// decodeTaskFrame parses a task frame (a Go child reads them). The worker
// writes every frame with appendTaskFrame, which encoding/json v2 reads in
// one pass; its envelope may hold what the worker's own decoder accepted
// (invalid UTF-8, duplicate keys), so those are allowed, and anything
// else falls back to encoding/json.
func decodeTaskFrame(body []byte, f *taskFrame) error {
	if jsonv2.Unmarshal(body, f, lenientFrame...) == nil {
		return nil
	}
	*f = taskFrame{}
	return json.Unmarshal(body, f)
}

// lenientFrame lets a task frame's envelope through as the worker took it.
var lenientFrame = []jsonv2.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// clip shortens b to at most n bytes for a message.
func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
