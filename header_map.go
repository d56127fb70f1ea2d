package drover

import (
	"encoding/json"
	"unicode/utf8"
)

// headerMap is the envelope's "headers" object. Its decoder reads the common
// form — string keys and values without escapes, valid UTF-8 — in one pass;
// anything else goes through encoding/json, with its results and errors.
// encoding/json's generic map decoding costs several times a whole envelope
// without headers, and every traced message carries a header.
type headerMap map[string]string

// UnmarshalJSON implements json.Unmarshaler. data is one JSON value that
// the caller's decoder has already checked for syntax.
func (h *headerMap) UnmarshalJSON(data []byte) error {
	if m, ok := decodeFlatStrings(data); ok {
		*h = m
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*h = m
	return nil
}

// decodeFlatStrings decodes {"k":"v",…} whose strings hold no backslash,
// control character or invalid UTF-8; ok is false for anything else (null,
// other value types, escapes), which the caller decodes the general way.
func decodeFlatStrings(data []byte) (map[string]string, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	m := make(map[string]string, 2)
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return m, skipSpace(data, i+1) == len(data)
	}
	for {
		k, j, ok := plainString(data, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(data, j)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		v, j, ok := plainString(data, skipSpace(data, i+1))
		if !ok {
			return nil, false
		}
		m[k] = v
		i = skipSpace(data, j)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return m, skipSpace(data, i+1) == len(data)
		default:
			return nil, false
		}
	}
}

// plainString reads a JSON string at data[i] that needs no unescaping and
// returns it and the index after its closing quote.
func plainString(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			s := data[i+1 : j]
			if !utf8.Valid(s) {
				return "", 0, false
			}
			return string(s), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}
