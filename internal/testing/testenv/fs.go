package testenv

import (
	"errors"

	"github.com/drover-dev/drover/internal/localserver"
)

func isNotInstalled(err error) bool { return errors.Is(err, localserver.ErrNotInstalled) }
