package fleetbench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Latencies are counted in logarithmic buckets 2% wide from 1 µs up to
// about 17 minutes: bucket i holds latencies in [growth^i, growth^(i+1)) µs,
// bucket 0 everything below 1.02 µs (and negative readings, from clocks that
// disagree by a little). A quantile read from the buckets is off by at most
// 2% of its value.
const (
	growth     = 1.02
	numBuckets = 1400
)

var logGrowth = math.Log(growth)

// bucketOf returns the bucket of a latency.
func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < growth {
		return 0
	}
	return min(int(math.Log(us)/logGrowth), numBuckets-1)
}

// bucketUpper is the upper bound of bucket i: what a quantile falling in it
// reports (never an underestimate).
func bucketUpper(i int) time.Duration {
	return time.Duration(math.Pow(growth, float64(i+1)) * float64(time.Microsecond))
}

// Histogram counts latencies; Observe is safe from any goroutine and costs
// one logarithm and one atomic add.
type Histogram struct {
	buckets [numBuckets]atomic.Int64
}

// Observe counts one latency.
func (h *Histogram) Observe(d time.Duration) { h.buckets[bucketOf(d)].Add(1) }

// Snapshot copies the counts.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.buckets {
		s.Counts[i] = h.buckets[i].Load()
	}
	return s
}

// Snapshot is a histogram's counts at one moment. Subtracting two snapshots
// of the same histogram gives the latencies observed in between.
type Snapshot struct {
	Counts [numBuckets]int64
}

// Total is the number of latencies counted.
func (s *Snapshot) Total() int64 {
	var n int64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Add adds o's counts to s (to merge the histograms of several workers).
func (s *Snapshot) Add(o *Snapshot) {
	for i := range s.Counts {
		s.Counts[i] += o.Counts[i]
	}
}

// Sub subtracts an earlier snapshot of the same histogram from s.
func (s *Snapshot) Sub(earlier *Snapshot) {
	for i := range s.Counts {
		s.Counts[i] -= earlier.Counts[i]
	}
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1), or 0 when nothing was counted.
func (s *Snapshot) Quantile(q float64) time.Duration {
	total := s.Total()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen int64
	for i, c := range s.Counts {
		seen += c
		if seen >= rank {
			return bucketUpper(i)
		}
	}
	return bucketUpper(numBuckets - 1)
}

// WriteFile writes the snapshot to path atomically (a temporary file in the
// same directory, renamed): one line per non-empty bucket, "index count".
func (s *Snapshot) WriteFile(path string) error {
	var b strings.Builder
	b.WriteString("# drover fleetbench latency histogram v1\n")
	for i, c := range s.Counts {
		if c != 0 {
			fmt.Fprintf(&b, "%d %d\n", i, c)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadSnapshot reads a file written by WriteFile. A file that does not
// exist yet is an empty snapshot (nothing was observed).
func ReadSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		idx, count, ok := strings.Cut(text, " ")
		i, err1 := strconv.Atoi(idx)
		c, err2 := strconv.ParseInt(count, 10, 64)
		if !ok || err1 != nil || err2 != nil || i < 0 || i >= numBuckets {
			return s, fmt.Errorf("%s:%d: want \"bucket count\", have %q", path, line, text)
		}
		s.Counts[i] = c
	}
	return s, sc.Err()
}

// Publish writes h's snapshot to path every interval until stop is closed,
// skipping writes while nothing changed. It is what a bench-only handler
// runs in the worker, so that the harness reads the latencies of another
// process. Write errors are retried on the next tick.
func (h *Histogram) Publish(path string, interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := int64(-1)
	for {
		s := h.Snapshot()
		if n := s.Total(); n != last {
			if s.WriteFile(path) == nil {
				last = n
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
