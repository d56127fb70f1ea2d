package fleetbench

import (
	"os"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
