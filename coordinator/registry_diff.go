package coordinator

import "slices"

// RegistryDiff is what changed between two registry snapshots.
type RegistryDiff struct {
	Added   []RegisteredQueue // listed now, not before
	Removed []string          // listed before, not now
	Changed []string          // listed in both, with another weight or tags
}

// Empty reports whether nothing changed.
func (d RegistryDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0
}

// Diff returns what changed from prev to r. Between snapshots of one
// registry watch its cost grows with the buckets that changed, not with the
// queues: they share the buckets that did not change, and those are
// skipped unread. (A snapshot from NewRegistry is compared queue by queue.)
func (r Registry) Diff(prev Registry) RegistryDiff {
	var d RegistryDiff
	if (r.names == nil && len(r.buckets) > 0) || (prev.names == nil && len(prev.buckets) > 0) {
		return r.diffAll(prev)
	}
	i, j := 0, 0
	for i < len(r.names) || j < len(prev.names) {
		switch {
		case j == len(prev.names) || (i < len(r.names) && r.names[i] < prev.names[j]):
			d.addAll(r.buckets[i])
			i++
		case i == len(r.names) || prev.names[j] < r.names[i]:
			d.removeAll(prev.buckets[j])
			j++
		default:
			if r.buckets[i] != prev.buckets[j] {
				d.diffBucket(r.buckets[i], prev.buckets[j])
			}
			i++
			j++
		}
	}
	return d
}

// diffAll is Diff queue by queue.
func (r Registry) diffAll(prev Registry) RegistryDiff {
	var d RegistryDiff
	before := map[string]RegisteredQueue{}
	for q := range prev.All() {
		before[q.Name] = q
	}
	for q := range r.All() {
		b, ok := before[q.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, q)
		case b.Weight != q.Weight || !slices.Equal(b.Tags, q.Tags):
			d.Changed = append(d.Changed, q.Name)
		}
		delete(before, q.Name)
	}
	for q := range before {
		d.Removed = append(d.Removed, q)
	}
	slices.Sort(d.Removed)
	return d
}

func (d *RegistryDiff) addAll(b *packedBucket) {
	for k := range b.len() {
		d.Added = append(d.Added, b.at(k))
	}
}

func (d *RegistryDiff) removeAll(b *packedBucket) {
	for k := range b.len() {
		d.Removed = append(d.Removed, b.nameAt(k))
	}
}

// diffBucket merges two versions of one bucket, both sorted by name.
func (d *RegistryDiff) diffBucket(now, before *packedBucket) {
	i, j := 0, 0
	for i < now.len() || j < before.len() {
		switch {
		case j == before.len() || (i < now.len() && now.nameAt(i) < before.nameAt(j)):
			d.Added = append(d.Added, now.at(i))
			i++
		case i == now.len() || before.nameAt(j) < now.nameAt(i):
			d.Removed = append(d.Removed, before.nameAt(j))
			j++
		default:
			a, b := now.at(i), before.at(j)
			if a.Weight != b.Weight || !slices.Equal(a.Tags, b.Tags) {
				d.Changed = append(d.Changed, a.Name)
			}
			i++
			j++
		}
	}
}
