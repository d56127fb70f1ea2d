package coordinator

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// The hand-written codec (codec.go) must write exactly encoding/json's
// bytes and read exactly what encoding/json reads: nodes are shared with
// members of other versions.

// nameClasses are the kinds of character a name may hold, and some it may
// not (a node written by another writer can hold anything).
var nameClasses = []string{
	"abcxyzABCXYZ019", "-_.~!#$%()*+,;=?@[]^`|'", // plain ASCII
	`<>&`, `"\`, // escaped by encoding/json (HTML, quoting)
	"\x00\x01\b\f\n\r\t\x1f\x7f", // control characters
	"é日本€ÿ", "😀𝄞",                // UTF-8, 2 to 4 bytes
	"\u2028\u2029",     // escaped by encoding/json (JavaScript)
	"\xff\xc3\xe2\x82", // invalid UTF-8
}

func randomName(r *rand.Rand, plain bool) string {
	var b strings.Builder
	for range 1 + r.IntN(20) {
		i := r.IntN(len(nameClasses))
		if plain {
			i = []int{0, 1, 5, 6}[r.IntN(4)] // what encoding/json writes as it is
		}
		class := nameClasses[i]
		if i == len(nameClasses)-1 { // invalid UTF-8: bytes, not runes
			b.WriteByte(class[r.IntN(len(class))])
			continue
		}
		rs := []rune(class)
		b.WriteRune(rs[r.IntN(len(rs))])
	}
	return b.String()
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return math.MaxInt64 - r.Int64N(3)
	case 2:
		return math.MinInt64 + r.Int64N(3)
	case 3:
		return -r.Int64N(1000)
	}
	return r.Int64N(1_000_000)
}

func randomBucket(r *rand.Rand, plain bool) bucketData {
	var b bucketData
	switch r.IntN(6) {
	case 0: // nil queues
	case 1:
		b.Queues = []string{}
	default:
		for range r.IntN(200) {
			b.Queues = append(b.Queues, randomName(r, plain))
		}
	}
	if r.IntN(2) == 0 {
		b.Weight = map[string]int{}
		for range r.IntN(5) {
			b.Weight[randomName(r, plain)] = int(randomInt(r))
		}
	}
	if r.IntN(2) == 0 {
		b.Tags = map[string][]string{}
		for range r.IntN(5) {
			var t []string
			switch r.IntN(4) {
			case 0: // nil: null
			case 1:
				t = []string{}
			default:
				for range 1 + r.IntN(3) {
					t = append(t, randomName(r, plain))
				}
			}
			b.Tags[randomName(r, plain)] = t
		}
	}
	if r.IntN(2) == 0 {
		b.Revs = map[string]int64{}
		for range r.IntN(5) {
			b.Revs[randomName(r, plain)] = randomInt(r)
		}
	}
	return b
}

func randomChunk(r *rand.Rand, plain bool) ShareChunk {
	c := ShareChunk{Generation: randomInt(r), New: r.IntN(2) == 0}
	if r.IntN(5) > 0 {
		c.Queues = []string{}
		for range r.IntN(300) {
			c.Queues = append(c.Queues, randomName(r, plain))
		}
	}
	return c
}

func randomHeader(r *rand.Rand) shareHeader {
	h := shareHeader{Generation: randomInt(r), Queues: int(randomInt(r))}
	if r.IntN(5) > 0 {
		h.Chunks = []int64{}
		for range r.IntN(9) {
			h.Chunks = append(h.Chunks, randomInt(r))
		}
	}
	return h
}

// checkEncode fails when enc's bytes are not json.Marshal(v)'s.
func checkEncode(t *testing.T, v any, enc []byte) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, want) {
		t.Fatalf("encoding of %#v:\nwant %s\nhave %s", v, want, enc)
	}
}

// checkDecode fails when decode reads data otherwise than json.Unmarshal
// does (a value, or an error, where the other has the other).
func checkDecode[T any](t *testing.T, data []byte, decode func([]byte) (T, error)) {
	t.Helper()
	var want T
	werr := json.Unmarshal(data, &want)
	have, herr := decode(data)
	switch {
	case (werr == nil) != (herr == nil):
		t.Fatalf("decoding %q: want error %v, have %v", data, werr, herr)
	case werr == nil && !reflect.DeepEqual(have, want):
		t.Fatalf("decoding %q:\nwant %#v\nhave %#v", data, want, have)
	}
}

func TestCodecWritesWhatEncodingJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 1))
	for i := range 3000 {
		plain := i%2 == 0
		b := randomBucket(r, plain)
		enc, _ := b.encode()
		checkEncode(t, b, enc)
		c := randomChunk(r, plain)
		checkEncode(t, c, c.encode())
		h := randomHeader(r)
		checkEncode(t, h, h.encode())
	}
	for _, c := range []ShareChunk{{}, {Queues: []string{}}, {Generation: -1, Queues: []string{""}, New: true}} {
		checkEncode(t, c, c.encode())
	}
	for _, h := range []shareHeader{{}, {Chunks: []int64{}}, {Generation: 1, Chunks: []int64{0, -1}, Queues: -3}} {
		checkEncode(t, h, h.encode())
	}
}

func TestCodecReadsWhatEncodingJSONReads(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 2))
	for i := range 3000 {
		plain := i%2 == 0
		b, _ := json.Marshal(randomBucket(r, plain))
		checkDecode(t, b, decodeBucketData)
		c, _ := json.Marshal(randomChunk(r, plain))
		checkDecode(t, c, decodeShareChunk)
		h, _ := json.Marshal(randomHeader(r))
		checkDecode(t, h, decodeShareHeader)
		// Damaged or foreign data: a byte changed, inserted or cut.
		for _, data := range [][]byte{b, c, h} {
			checkDecode(t, mutate(r, data), decodeBucketData)
			checkDecode(t, mutate(r, data), decodeShareChunk)
			checkDecode(t, mutate(r, data), decodeShareHeader)
		}
	}
}

// mutate returns a copy of data with one byte replaced, inserted or cut.
func mutate(r *rand.Rand, data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) == 0 {
		return []byte(" ")
	}
	i := r.IntN(len(out))
	bs := []byte(` "\,:{}[]0-9en.lE` + "\x00\xff")
	b := bs[r.IntN(len(bs))]
	switch r.IntN(3) {
	case 0:
		out[i] = b
	case 1:
		out = append(out[:i], append([]byte{b}, out[i:]...)...)
	default:
		out = out[:i]
	}
	return out
}

// The shapes a writer other than json.Marshal may produce: all read as
// encoding/json reads them.
var foreignData = []string{
	``, `null`, `{}`, ` {"queues":["a"]}`, `{"queues":["a"]} `, `{"queues": ["a"]}`,
	`{"queues":["a"],"unknown":1}`, `{"weight":{"a":1},"queues":["a"]}`, `{"Queues":["a"]}`,
	`{"queues":["\u0061","b\"c","<"]}`, `{"queues":["\u003c"]}`, `{"queues":null,"weight":null}`,
	`{"queues":["a"],"weight":{}}`, `{"queues":["a"],"weight":{"a":-0}}`, `{"queues":["a"],"weight":{"a":1e2}}`,
	`{"queues":["a"],"weight":{"a":01}}`, `{"queues":["a"],"weight":{"a":1.0}}`,
	`{"queues":["a"],"weight":{"a":99999999999999999999}}`, `{"queues":["a"],"weight":{"a":999999999999999999}}`,
	`{"queues":["a"],"tags":{"a":null}}`, `{"queues":["a"],"tags":{"a":[]}}`, `{"queues":["a"],"tags":{"a":["x","x"]}}`,
	`{"queues":["a"],"revs":{"a":1,"a":2}}`, `{"queues":["a"],"weight":{"a":1,"a":2}}`, `{"queues":["a","a"]}`,
	`{"queues":["a"]}x`, `{"queues":["a"]`, `{"queues":["a",]}`, `{"queues":[,"a"]}`, `{"queues":["a""b"]}`,
	"{\"queues\":[\"a\xffb\"]}", "{\"queues\":[\"a\tb\"]}", "{\"queues\":[\"\u2028\"]}",
	`{"generation":1,"queues":["a"]}`, `{"generation":1,"queues":["a"],"new":true}`, `{"generation":1,"queues":["a"],"new":false}`,
	`{"generation":1,"queues":["a"],"new":null}`, `{"generation":1,"queues":null}`, `{"generation":-0,"queues":[]}`,
	`{"generation":1,"queues":[],"new":true,"new":false}`, `{"generation":1,"chunks":[1,2],"queues":3}`,
	`{"generation":1,"chunks":null,"queues":3}`, `{"generation":1,"chunks":[],"queues":0}`, `{"generation":1,"chunks":[1,],"queues":0}`,
	`{"generation":1,"chunks":[1],"queues":-1}`, `{"generation":1,"chunks":[1],"queues":1,"x":2}`,
}

func TestCodecReadsForeignDataAsEncodingJSON(t *testing.T) {
	for _, d := range foreignData {
		checkDecode(t, []byte(d), decodeBucketData)
		checkDecode(t, []byte(d), decodeShareChunk)
		checkDecode(t, []byte(d), decodeShareHeader)
	}
}

// The fast path must be the one taken for what json.Marshal writes of
// plain names: a codec that always fell back would pass the tests above.
func TestCodecParsesWhatItWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 3))
	for range 200 {
		b := randomBucket(r, true)
		enc, _ := b.encode()
		if _, ok := parseBucket(enc); !ok {
			t.Fatalf("want the fast path for %s, have encoding/json's", enc)
		}
		c := randomChunk(r, true)
		if _, ok := parseShareChunk(c.encode()); !ok {
			t.Fatalf("want the fast path for %s, have encoding/json's", c.encode())
		}
		h := randomHeader(r)
		if _, ok := parseShareHeader(h.encode()); !ok {
			t.Fatalf("want the fast path for %s, have encoding/json's", h.encode())
		}
	}
}

func FuzzBucketDecode(f *testing.F) {
	for _, d := range foreignData {
		f.Add([]byte(d))
	}
	r := rand.New(rand.NewPCG(40, 4))
	for range 20 {
		b, _ := json.Marshal(randomBucket(r, false))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, decodeBucketData)
		checkDecode(t, data, decodeShareChunk)
		checkDecode(t, data, decodeShareHeader)
	})
}

func FuzzBucketEncode(f *testing.F) {
	f.Add("a", "b<c", "é", int64(3))
	f.Add("\u2028", "\xff", "", int64(-1))
	f.Fuzz(func(t *testing.T, q1, q2, tag string, n int64) {
		b := bucketData{Queues: []string{q1, q2}, Weight: map[string]int{q1: int(n)}, Tags: map[string][]string{q2: {tag}}, Revs: map[string]int64{tag: n}}
		enc, _ := b.encode()
		checkEncode(t, b, enc)
		c := ShareChunk{Generation: n, Queues: []string{q1, q2, tag}, New: n%2 == 0}
		checkEncode(t, c, c.encode())
	})
}
