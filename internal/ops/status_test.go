package ops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
)

// StatusOf is the one mapping of an operation's error to the status the
// console answers and ctl and the console audit.
func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, http.StatusOK},
		{fmt.Errorf("queue q: %w", drover.ErrQueueNotFound), http.StatusNotFound},
		{drover.ErrNotFound, http.StatusNotFound},
		{badInput("limit %d", -1), http.StatusBadRequest},
		{drover.ErrInvalidQueueName, http.StatusBadRequest},
		{fmt.Errorf("reset: %w", coordinator.ErrQueueOwned), http.StatusConflict},
		{ErrRefused, http.StatusConflict},
		{fmt.Errorf("member w1: %w", ErrUnreachable), http.StatusBadGateway},
		{context.Canceled, http.StatusInternalServerError},
		{errors.New("redis: connection refused"), http.StatusInternalServerError},
	} {
		if have := StatusOf(c.err); have != c.want {
			t.Errorf("StatusOf(%v): want %d, have %d", c.err, c.want, have)
		}
	}
}
