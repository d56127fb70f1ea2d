package executor

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	Traceparent string          `json:"traceparent,omitempty"`
	Tracestate  string          `json:"tracestate,omitempty"`
	Envelope    json.RawMessage `json:"envelope"`
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
// frame.
func appendTaskFrame(dst []byte, f *taskFrame, envelope []byte) ([]byte, error) {
	head, err := json.Marshal(f) // without the envelope: f.Envelope is nil
	if err != nil {
		return dst, err
	}
	// head is {...,"envelope":null}; replace the null.
	head = bytes.TrimSuffix(head, []byte("null}"))
	n := len(head) + len(envelope) + 1
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = append(dst, head...)
	dst = append(dst, envelope...)
	return append(dst, '}'), nil
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
	var f resultFrame
	if err := json.Unmarshal(body, &f); err != nil {
		return f, fmt.Errorf("%w: not a JSON frame: %v (%q)", errProtocol, err, clip(body, 80))
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

// clip shortens b to at most n bytes for a message.
func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
