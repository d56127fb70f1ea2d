// Package schedulertest holds an in-memory schedule store and the contract
// suite every scheduler.Store and scheduler.Catalog implementation must pass.
package schedulertest

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
)

// StoreCatalog is both halves of a schedule store.
type StoreCatalog interface {
	scheduler.Store
	scheduler.Catalog
}

// MemStore is an in-memory StoreCatalog for tests of the scheduler's logic.
// It behaves like queue.ScheduleStore (the contract suite runs against
// both) but scans every entry, so it is for small tests only. Its zero
// value is not usable; call NewMemStore.
type MemStore struct {
	mu      sync.Mutex
	entries map[string]*memEntry
}

type memEntry struct {
	definition []byte
	meta       []byte
	score      float64
	indexed    bool // a member of the index (not just a hash)
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{entries: make(map[string]*memEntry)} }

var _ StoreCatalog = (*MemStore)(nil)

// Put writes a raw entry the way another language would (definition, then
// score); a nil definition leaves the hash without one.
func (m *MemStore) Put(name string, definition []byte, score float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(name)
	if definition != nil {
		e.definition = append([]byte(nil), definition...)
	}
	e.score, e.indexed = score, true
}

// Score returns an entry's score and whether it is in the index.
func (m *MemStore) Score(name string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !e.indexed {
		return 0, false
	}
	return e.score, true
}

func (m *MemStore) entry(name string) *memEntry {
	e, ok := m.entries[name]
	if !ok {
		e = &memEntry{}
		m.entries[name] = e
	}
	return e
}

func (m *MemStore) record(name string, e *memEntry) scheduler.Record {
	return scheduler.Record{Name: name, Definition: clone(e.definition), Meta: clone(e.meta), Score: e.score}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// sorted returns the indexed names ordered by (score, name), as a ZSET is.
func (m *MemStore) sorted() []string {
	var names []string
	for n, e := range m.entries {
		if e.indexed {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := m.entries[names[i]], m.entries[names[j]]
		if a.score != b.score {
			return a.score < b.score
		}
		return names[i] < names[j]
	})
	return names
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// DueSchedules implements scheduler.Store.
func (m *MemStore) DueSchedules(ctx context.Context, until time.Time, limit int) ([]scheduler.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var recs []scheduler.Record
	for _, n := range m.sorted() {
		e := m.entries[n]
		if e.score > unix(until) || len(recs) == limit {
			break
		}
		recs = append(recs, m.record(n, e))
	}
	return recs, nil
}

// NextScheduleDue implements scheduler.Store.
func (m *MemStore) NextScheduleDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.sorted() {
		if s := m.entries[n].score; s > unix(after) && !math.IsInf(s, 1) {
			sec, frac := math.Modf(s)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
		}
	}
	return time.Time{}, false, nil
}

// AdvanceSchedule implements scheduler.Store.
func (m *MemStore) AdvanceSchedule(ctx context.Context, name string, from, to float64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !e.indexed || e.score != from {
		return false, nil
	}
	e.score = to
	return true, nil
}

// RecordScheduleFires implements scheduler.Store.
func (m *MemStore) RecordScheduleFires(ctx context.Context, name string, fires int, lastSlot, ranAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || e.definition == nil {
		return nil
	}
	var meta scheduler.Meta
	if len(e.meta) > 0 {
		_ = json.Unmarshal(e.meta, &meta)
	}
	meta.TotalRunCount += int64(fires)
	if lastSlot.After(meta.LastFire) {
		meta.LastFire = lastSlot.Truncate(time.Second)
		meta.LastRunAt = ranAt
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	e.meta = b
	return nil
}

// CreateSchedule implements scheduler.Catalog.
func (m *MemStore) CreateSchedule(ctx context.Context, name string, definition []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[name]; ok && e.definition != nil && e.indexed {
		return scheduler.ErrExists
	}
	e := m.entry(name)
	e.definition, e.score, e.indexed = clone(definition), scheduler.ScorePlan, true
	return nil
}

// ReplaceSchedule implements scheduler.Catalog.
func (m *MemStore) ReplaceSchedule(ctx context.Context, name string, definition []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !e.indexed {
		return drover.ErrNotFound
	}
	e.definition, e.score = clone(definition), scheduler.ScorePlan
	return nil
}

// DeleteSchedule implements scheduler.Catalog.
func (m *MemStore) DeleteSchedule(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !e.indexed {
		return drover.ErrNotFound
	}
	delete(m.entries, name)
	return nil
}

// GetSchedule implements scheduler.Catalog.
func (m *MemStore) GetSchedule(ctx context.Context, name string) (scheduler.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || !e.indexed {
		return scheduler.Record{}, drover.ErrNotFound
	}
	return m.record(name, e), nil
}

// ListSchedules implements scheduler.Catalog.
func (m *MemStore) ListSchedules(ctx context.Context) ([]scheduler.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var recs []scheduler.Record
	for n, e := range m.entries {
		if e.indexed {
			recs = append(recs, m.record(n, e))
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	return recs, nil
}
