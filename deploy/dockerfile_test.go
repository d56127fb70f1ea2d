package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDockerImageRunsThePythonExample: the runtime image installs Python
// with its standard library. python3-minimal alone has no json module, so
// examples/tasks/hello.py failed with "No module named 'json'".
func TestDockerImageRunsThePythonExample(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime stage is the last FROM.
	stages := strings.Split(string(b), "\nFROM ")
	runtime := strings.ReplaceAll(stages[len(stages)-1], "\\\n", " ")
	m := regexp.MustCompile(`apt-get install ([^&\n]*)`).FindStringSubmatch(runtime)
	if m == nil {
		t.Fatalf("want an apt-get install in the runtime stage, have:\n%s", runtime)
	}
	pkgs := strings.Fields(m[1])
	py, _ := filepath.Glob("../examples/tasks/*.py")
	if len(py) > 0 && !slices.Contains(pkgs, "python3") && !slices.Contains(pkgs, "libpython3-stdlib") {
		t.Errorf("examples/tasks has Python tasks (%s) that import the standard library: want python3 (or libpython3-stdlib) installed, have %v", strings.Join(py, ", "), pkgs)
	}
}
