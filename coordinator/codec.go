package coordinator

import "encoding/json"

// encode returns json.Marshal(b)'s bytes.
func (b bucketData) encode() ([]byte, error) { return json.Marshal(b) }

// encode returns json.Marshal(c)'s bytes.
func (c ShareChunk) encode() []byte { return mustJSON(c) }

// decodeShareChunk is json.Unmarshal(data, &c) for a share chunk.
func decodeShareChunk(data []byte) (ShareChunk, error) {
	var c ShareChunk
	err := json.Unmarshal(data, &c)
	return c, err
}
