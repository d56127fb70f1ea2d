package examples_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// BenchmarkPythonEnqueue measures the Python client's enqueue from one
// thread against a private Redis: one message per call, batches of 100,
// and a bare redis-py LPUSH loop in the same run (tools/benchreport,
// "Python client"). Each iteration is one Python process enqueueing n
// messages; msgs/s is measured inside it (start-up excluded).
func BenchmarkPythonEnqueue(b *testing.B) {
	if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
		b.Fatalf("%s with redis-py is needed: apt-get install -y python3-redis: %v\n%s", python, err, out)
	}
	srv := testenv.Redis(b)
	pyDir, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"single", "batch100", "lpush"} {
		b.Run("mode="+mode, func(b *testing.B) {
			n := 20000
			if mode == "batch100" {
				n = 100000
			}
			var sum float64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(python, filepath.Join(pyDir, "bench_enqueue.py"),
					"redis://"+srv.Addr+"/0", testenv.Prefix(b), mode, strconv.Itoa(n))
				cmd.Env = append(cmd.Environ(), "PYTHONPATH="+pyDir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("bench_enqueue.py %s: %v\n%s", mode, err, out)
				}
				v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatalf("bench_enqueue.py %s: %q", mode, out)
				}
				sum += v
			}
			b.ReportMetric(sum/float64(b.N), "msgs/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
