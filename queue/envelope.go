package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/drover-dev/drover"
)

// encodeEnvelope writes m's envelope JSON, as m.MarshalJSON does, without
// reflection: enqueue spends most of its client time here. Messages with
// Extra fields, or times encoding/json would refuse, take m.MarshalJSON.
// FuzzDecodeEnvelope checks that both encodings decode to the same message.
func encodeEnvelope(m *drover.Message) ([]byte, error) {
	if len(m.Extra) > 0 || !jsonTime(m.EnqueuedAt) || (!m.FireAt.IsZero() && !jsonTime(m.FireAt)) {
		return m.MarshalJSON()
	}
	b := make([]byte, 0, 160+len(m.ID)+len(m.Task)+len(m.Args))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"queue":`...)
	b = appendJSONString(b, m.Queue)
	b = append(b, `,"task":`...)
	b = appendJSONString(b, m.Task)
	if len(m.Args) > 0 {
		b = append(b, `,"args":`...)
		switch {
		case !bytes.ContainsAny(m.Args, " \t\r\n") && json.Valid(m.Args):
			b = append(b, m.Args...) // already compact
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, m.Args); err != nil {
				return nil, fmt.Errorf("args are not valid JSON: %w", err)
			}
			b = append(b, buf.Bytes()...)
		}
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(m.Attempt), 10)
	if m.MaxAttempts != 0 {
		b = append(b, `,"max_attempts":`...)
		b = strconv.AppendInt(b, int64(m.MaxAttempts), 10)
	}
	b = append(b, `,"enqueued_at":"`...)
	b = m.EnqueuedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if len(m.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		keys := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, m.Headers[k])
		}
		b = append(b, '}')
	}
	if m.Schedule != "" {
		b = append(b, `,"schedule":`...)
		b = appendJSONString(b, m.Schedule)
	}
	if !m.FireAt.IsZero() {
		b = append(b, `,"fire_at":"`...)
		b = m.FireAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// jsonTime reports whether encoding/json encodes t as plain RFC 3339 (it
// refuses years outside 0..9999 and offsets it cannot write).
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// does: quotes, backslashes, control characters, <, >, &, U+2028 and U+2029;
// invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
