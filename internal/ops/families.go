package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// List lists the queue families, sorted by name.
func (o Families) List(ctx context.Context) ([]coordinator.FamilyEntry, error) {
	return o.zk.Families().List(ctx)
}

// Get reads one family (drover.ErrFamilyNotFound when there is none).
func (o Families) Get(ctx context.Context, name string) (coordinator.FamilyEntry, error) {
	if err := drover.ValidateQueueName(name); err != nil {
		return coordinator.FamilyEntry{}, badInput("family name: %v", err)
	}
	return o.zk.Families().Get(ctx, name)
}

// Set creates a family (version -1) or replaces it at the version
// read. It is refused (ErrRefused) when a family to create exists or one
// to replace changed meanwhile; a bad family is bad input.
func (o Families) Set(ctx context.Context, f drover.FamilyConfig, version int32) (int32, error) {
	if err := checkFamily(f); err != nil {
		return 0, err
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
	c, err := o.Replace(ctx, f, version)
	return c.Version, err
}

// Replace replaces a family at the version read (-1: any) and gives
// the queues it registered the new configuration, except those an operator
// changed (coordinator.Families.Change): the answer counts both. It
// is refused (ErrRefused) when the family changed meanwhile; a bad family
// is bad input. When the queues were updated only in part, the error says
// so and the answer counts those updated.
func (o Families) Replace(ctx context.Context, f drover.FamilyConfig, version int32) (coordinator.FamilyChange, error) {
	if err := checkFamily(f); err != nil {
		return coordinator.FamilyChange{}, err
	}
	c, err := o.zk.Families().Change(ctx, f, version)
	switch {
	case errors.Is(err, coordinator.ErrConflict):
		return c, fmt.Errorf("%w: %w", ErrRefused, err)
	case errors.Is(err, drover.ErrInvalidConfig):
		return c, badInput("%v", err)
	}
	return c, err
}

// checkFamily checks a family an operator writes: valid, and with at least
// one task route. A family without routes would register queues whose
// tasks have nowhere to run (only registered Go handlers, which '*=@go'
// routes explicitly). Stored families are not held to the second rule.
func checkFamily(f drover.FamilyConfig) error {
	if err := f.Validate(); err != nil {
		return badInput("%v", err)
	}
	if len(f.Queue.Tasks) == 0 {
		return badInput("family %s: queue.tasks: no task route: give at least one (ctl: --task NAME=ARGV, or --task '*=@go' for registered Go handlers)", f.Name)
	}
	return nil
}

// Delete removes a family; the queues it registered stay.
func (o Families) Delete(ctx context.Context, name string) error {
	if err := drover.ValidateQueueName(name); err != nil {
		return badInput("family name: %v", err)
	}
	return o.zk.Families().Delete(ctx, name)
}
