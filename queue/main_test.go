package queue

import (
	"os"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// TestMain is the package's only TestMain (the schedule store's tests share
// it): it stops every server testenv started.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
