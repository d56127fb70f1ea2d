package queue

import (
	"context"
	"fmt"
)

// LayoutVersion is the version of the documented Redis layout: the
// version of the enqueue script producers in other languages run
// (docs/redis-schema.md, "Compatibility"). The fleet writes it to
// <prefix>:layout (MarkLayout); a producer that speaks another version
// refuses to enqueue (the Python client raises LayoutError) rather than
// enqueue in a way the fleet no longer serves at full speed.
// tools/pyscripts checks that it matches the enqueue script's header.
const LayoutVersion = 3

// MarkLayout writes LayoutVersion to <prefix>:layout. Workers call it at
// start-up; it is idempotent.
func (s *Store) MarkLayout(ctx context.Context) error {
	key := s.keys.prefix + ":layout"
	if err := s.rdb.Set(ctx, key, LayoutVersion, 0).Err(); err != nil {
		return fmt.Errorf("mark the layout version in %s: %w", key, err)
	}
	return nil
}
