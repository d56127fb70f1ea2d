package drover

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes that reads from JSON as a number or as a
// string with a unit ("200MiB", "1GiB", "500MB", "4096") and writes as a
// string in the largest binary unit that holds it exactly.
type ByteSize int64

// byteUnits are the accepted suffixes, longest first within each letter so
// that "MiB" is not read as "B".
var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseByteSize reads "200MiB", "1.5GiB", "500MB" or a plain number of
// bytes. Units are case-sensitive as written here; K, M, G and T alone are
// binary (KiB, MiB, …).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, factor = strings.TrimSpace(rest), u.factor
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || (n > 0 && factor > (1<<62)/n) {
			return 0, fmt.Errorf("byte size %q: out of range", s)
		}
		return ByteSize(n * factor), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(factor) > 1<<62 {
		return 0, fmt.Errorf("byte size %q: want a number of bytes or a number with a unit like 200MiB", s)
	}
	return ByteSize(f * float64(factor)), nil
}

// String writes the size in the largest binary unit that holds it exactly.
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.factor == 0 {
			return strconv.FormatInt(int64(b)/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalJSON writes the size as a string ("200MiB").
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads a number of bytes or a string with a unit.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := ParseByteSize(s)
		if err != nil {
			return err
		}
		*b = v
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("byte size: want a number or a string like \"200MiB\", have %s", data)
	}
	*b = ByteSize(n)
	return nil
}
