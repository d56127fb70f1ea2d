package queue

import (
	"testing"
	"time"
)

// BenchmarkEncodeEnvelope compares the enqueue path's encoder with
// Message.MarshalJSON (client CPU only, no Redis).
func BenchmarkEncodeEnvelope(b *testing.B) {
	m := benchMessage()
	m.ID = "01JD3Q8ZQ3V6YB5W0J7J8F2K4M"
	m.EnqueuedAt = time.Now().UTC()
	b.Run("encodeEnvelope", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := encodeEnvelope(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := m.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
