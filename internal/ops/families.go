package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// Families lists the queue families, sorted by name.
func (o *Ops) Families(ctx context.Context) ([]coordinator.FamilyEntry, error) {
	return o.zk.Families().List(ctx)
}

// Family reads one family (drover.ErrFamilyNotFound when there is none).
func (o *Ops) Family(ctx context.Context, name string) (coordinator.FamilyEntry, error) {
	if err := drover.ValidateQueueName(name); err != nil {
		return coordinator.FamilyEntry{}, badInput("family name: %v", err)
	}
	return o.zk.Families().Get(ctx, name)
}

// SetFamily creates a family (version -1) or replaces it at the version
// read. It is refused (ErrRefused) when a family to create exists or one
// to replace changed meanwhile; a bad family is bad input.
func (o *Ops) SetFamily(ctx context.Context, f drover.FamilyConfig, version int32) (int32, error) {
	if err := f.Validate(); err != nil {
		return 0, badInput("%v", err)
	}
	if version < 0 {
		err := o.zk.Families().Create(ctx, f)
		switch {
		case errors.Is(err, coordinator.ErrFamilyExists):
			return 0, fmt.Errorf("%w: %w", ErrRefused, err)
		case errors.Is(err, drover.ErrInvalidConfig):
			return 0, badInput("%v", err)
		}
		return 0, err
	}
	v, err := o.zk.Families().Update(ctx, f, version)
	switch {
	case errors.Is(err, coordinator.ErrConflict):
		return 0, fmt.Errorf("%w: %w", ErrRefused, err)
	case errors.Is(err, drover.ErrInvalidConfig):
		return 0, badInput("%v", err)
	}
	return v, err
}

// DeleteFamily removes a family; the queues it registered stay.
func (o *Ops) DeleteFamily(ctx context.Context, name string) error {
	if err := drover.ValidateQueueName(name); err != nil {
		return badInput("family name: %v", err)
	}
	return o.zk.Families().Delete(ctx, name)
}
