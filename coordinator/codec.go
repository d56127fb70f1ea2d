package coordinator

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The hot nodes of a churning fleet — registry buckets (every create and
// retire rewrites one, every member decodes it) and share chunks and
// headers (every placement) — are encoded and decoded here by hand, for
// the CPU: encoding/json's reflection, its validity pre-scan and a string
// and a growslice per name took a quarter of the rebalance leader's CPU
// during the churn benchmark (docs/decisions.md, "Issue 40: a hand-written
// codec for buckets and shares").
//
// The stored bytes do not change (old and new members read each other's
// nodes during a rolling upgrade): the encoders write exactly what
// json.Marshal writes — field order, omitempty, null for a nil slice, map
// keys sorted, and any string needing an escape (", \, control
// characters, <, >, &, U+2028, U+2029, invalid UTF-8) encoded by
// encoding/json itself. The decoders accept only the shape json.Marshal
// writes, with strings that need no unescaping; anything else (white
// space, another field order, an unknown field, an escape, a number
// that is not a plain integer) goes to encoding/json, so a node written by
// anyone else decodes exactly as before. codec_test.go compares both
// ways with encoding/json on random and edge-case inputs.

// encode returns json.Marshal(b)'s bytes; it cannot fail (the error is
// for the callers' shape).
func (b bucketData) encode() ([]byte, error) {
	n := len(`{"queues":}`) + 2 + (len(b.Weight)+len(b.Tags)+len(b.Revs))*24 + 32
	for _, q := range b.Queues {
		n += len(q) + 3
	}
	dst := make([]byte, 0, n)
	dst = append(dst, `{"queues":`...)
	dst = appendStrings(dst, b.Queues)
	if len(b.Weight) > 0 {
		dst = append(dst, `,"weight":`...)
		dst = appendMap(dst, b.Weight, func(dst []byte, v int) []byte { return strconv.AppendInt(dst, int64(v), 10) })
	}
	if len(b.Tags) > 0 {
		dst = append(dst, `,"tags":`...)
		dst = appendMap(dst, b.Tags, appendStrings)
	}
	if len(b.Revs) > 0 {
		dst = append(dst, `,"revs":`...)
		dst = appendMap(dst, b.Revs, func(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) })
	}
	return append(dst, '}'), nil
}

// encode returns json.Marshal(c)'s bytes.
func (c ShareChunk) encode() []byte {
	n := len(`{"generation":,"queues":,"new":true}`) + 20 + 2
	for _, q := range c.Queues {
		n += len(q) + 3
	}
	dst := make([]byte, 0, n)
	dst = append(dst, `{"generation":`...)
	dst = strconv.AppendInt(dst, c.Generation, 10)
	dst = append(dst, `,"queues":`...)
	dst = appendStrings(dst, c.Queues)
	if c.New {
		dst = append(dst, `,"new":true`...)
	}
	return append(dst, '}')
}

// encode returns json.Marshal(h)'s bytes.
func (h shareHeader) encode() []byte {
	dst := make([]byte, 0, 64+len(h.Chunks)*8)
	dst = append(dst, `{"generation":`...)
	dst = strconv.AppendInt(dst, h.Generation, 10)
	dst = append(dst, `,"chunks":`...)
	if h.Chunks == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, g := range h.Chunks {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, g, 10)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"queues":`...)
	dst = strconv.AppendInt(dst, int64(h.Queues), 10)
	return append(dst, '}')
}

// appendStrings appends ss as encoding/json does: null when nil.
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendMap appends m as encoding/json does: keys sorted by their bytes.
func appendMap[V any](dst []byte, m map[string]V, appendValue func([]byte, V) []byte) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, m[k])
	}
	return append(dst, '}')
}

// appendString appends s quoted as encoding/json quotes it: a string that
// needs no escape is copied; any other is left to encoding/json.
func appendString(dst []byte, s string) []byte {
	if !plainJSON(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(dst, q...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plainJSON reports whether encoding/json writes s between quotes as it
// is (and reads it back so): valid UTF-8 with no ", \, control character,
// <, >, & (escaped for HTML), U+2028 or U+2029.
func plainJSON(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !plainASCII[c] {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += n
	}
	return true
}

// plainASCII: the ASCII bytes encoding/json copies into a string as they are.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// decodeBucketData is json.Unmarshal(data, &b) for a bucket node, the
// shape json.Marshal writes parsed directly: the queue names (and map
// keys) share one string, the tags are strings of their own (a registry
// watch keeps them).
func decodeBucketData(data []byte) (bucketData, error) {
	if b, ok := parseBucket(data); ok {
		return b, nil
	}
	var b bucketData
	err := json.Unmarshal(data, &b)
	return b, err
}

func parseBucket(data []byte) (bucketData, bool) {
	var b bucketData
	c := jsonCursor{d: data}
	if !c.lit(`{"queues":`) {
		return b, false
	}
	all := string(data) // the names and keys are slices of it: one allocation
	var ok bool
	if b.Queues, ok = c.strings(all, bytes.Count(data, []byte{','})+1); !ok {
		return b, false
	}
	if c.lit(`,"weight":`) {
		b.Weight = map[string]int{}
		if !c.object(all, func(k string) bool {
			v, ok := c.int()
			b.Weight[k] = int(v)
			return ok
		}) {
			return b, false
		}
	}
	if c.lit(`,"tags":`) {
		b.Tags = map[string][]string{}
		if !c.object(all, func(k string) bool {
			t, ok := c.strings("", 1) // own strings: a registry watch shares tag sets for as long as it runs
			b.Tags[k] = t
			return ok
		}) {
			return b, false
		}
	}
	if c.lit(`,"revs":`) {
		b.Revs = map[string]int64{}
		if !c.object(all, func(k string) bool {
			v, ok := c.int()
			b.Revs[k] = v
			return ok
		}) {
			return b, false
		}
	}
	return b, c.lit("}") && c.i == len(data)
}

// decodeShareChunk is json.Unmarshal(data, &c) for a share chunk. Each
// name is a string of its own: a member keeps names long after the chunk.
func decodeShareChunk(data []byte) (ShareChunk, error) {
	if c, ok := parseShareChunk(data); ok {
		return c, nil
	}
	var c ShareChunk
	err := json.Unmarshal(data, &c)
	return c, err
}

func parseShareChunk(data []byte) (ShareChunk, bool) {
	var sc ShareChunk
	c := jsonCursor{d: data}
	var ok bool
	if !c.lit(`{"generation":`) {
		return sc, false
	}
	if sc.Generation, ok = c.int(); !ok || !c.lit(`,"queues":`) {
		return sc, false
	}
	if sc.Queues, ok = c.strings("", bytes.Count(data, []byte{','})+1); !ok {
		return sc, false
	}
	if c.lit(`,"new":true`) {
		sc.New = true
	} else {
		c.lit(`,"new":false`) // or absent
	}
	return sc, c.lit("}") && c.i == len(data)
}

// decodeShareHeader is json.Unmarshal(data, &h) for a share header.
func decodeShareHeader(data []byte) (shareHeader, error) {
	if h, ok := parseShareHeader(data); ok {
		return h, nil
	}
	var h shareHeader
	err := json.Unmarshal(data, &h)
	return h, err
}

func parseShareHeader(data []byte) (shareHeader, bool) {
	var h shareHeader
	c := jsonCursor{d: data}
	var ok bool
	if !c.lit(`{"generation":`) {
		return h, false
	}
	if h.Generation, ok = c.int(); !ok || !c.lit(`,"chunks":`) {
		return h, false
	}
	if !c.lit("null") {
		if !c.lit("[") {
			return h, false
		}
		h.Chunks = make([]int64, 0, bytes.Count(data, []byte{','}))
		for !c.lit("]") {
			if len(h.Chunks) > 0 && !c.lit(",") {
				return h, false
			}
			g, ok := c.int()
			if !ok {
				return h, false
			}
			h.Chunks = append(h.Chunks, g)
		}
	}
	if !c.lit(`,"queues":`) {
		return h, false
	}
	n, ok := c.int()
	h.Queues = int(n)
	return h, ok && c.lit("}") && c.i == len(data)
}

// jsonCursor reads the compact JSON json.Marshal writes; every method
// reports false on anything else, for the caller to leave the whole
// input to encoding/json.
type jsonCursor struct {
	d []byte
	i int
}

// lit consumes s if it comes next.
func (c *jsonCursor) lit(s string) bool {
	if len(c.d)-c.i < len(s) || string(c.d[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	return true
}

// str consumes a string that needs no unescaping and returns it: a slice
// of all (the input as a string) when all is not empty, else a new string.
func (c *jsonCursor) str(all string) (string, bool) {
	if c.i >= len(c.d) || c.d[c.i] != '"' {
		return "", false
	}
	start := c.i + 1
	high := false
	for j := start; j < len(c.d); j++ {
		switch b := c.d[j]; {
		case b == '"':
			if high && !utf8.Valid(c.d[start:j]) {
				return "", false // encoding/json reads invalid UTF-8 as U+FFFD
			}
			c.i = j + 1
			if all != "" {
				return all[start:j], true
			}
			return string(c.d[start:j]), true
		case b == '\\' || b < 0x20:
			return "", false
		case b >= utf8.RuneSelf:
			high = true
		}
	}
	return "", false
}

// strings consumes null or an array of strings (capacity: a guess of
// their count).
func (c *jsonCursor) strings(all string, capacity int) ([]string, bool) {
	if c.lit("null") {
		return nil, true
	}
	if !c.lit("[") {
		return nil, false
	}
	out := make([]string, 0, capacity)
	for !c.lit("]") {
		if len(out) > 0 && !c.lit(",") {
			return nil, false
		}
		s, ok := c.str(all)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// object consumes an object, calling value after each key to consume its
// value.
func (c *jsonCursor) object(all string, value func(key string) bool) bool {
	if !c.lit("{") {
		return false
	}
	for n := 0; !c.lit("}"); n++ {
		if n > 0 && !c.lit(",") {
			return false
		}
		k, ok := c.str(all)
		if !ok || !c.lit(":") || !value(k) {
			return false
		}
	}
	return true
}

// int consumes an integer as json.Marshal writes one (no leading zero,
// sign only when negative) in the range of an int64.
func (c *jsonCursor) int() (int64, bool) {
	j := c.i
	neg := j < len(c.d) && c.d[j] == '-'
	if neg {
		j++
	}
	start := j
	var v int64
	for ; j < len(c.d) && c.d[j] >= '0' && c.d[j] <= '9'; j++ {
		v = v*10 + int64(c.d[j]-'0')
	}
	digits := j - start
	if digits == 0 || digits > 19 || digits > 1 && c.d[start] == '0' || neg && digits == 1 && v == 0 {
		return 0, false
	}
	if j < len(c.d) && (c.d[j] == '.' || c.d[j] == 'e' || c.d[j] == 'E') {
		return 0, false
	}
	if digits == 19 { // may overflow: let strconv say
		n, err := strconv.ParseInt(string(c.d[c.i:j]), 10, 64)
		if err != nil {
			return 0, false
		}
		c.i = j
		return n, true
	}
	c.i = j
	if neg {
		v = -v
	}
	return v, true
}
