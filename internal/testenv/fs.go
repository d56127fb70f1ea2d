package testenv

import (
	"errors"
	"fmt"
	"os"
)

func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

func isNotInstalled(err error) bool { return errors.Is(err, errNotInstalled) }
