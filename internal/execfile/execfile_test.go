package execfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// TestAScriptWrittenBesideForksRuns: scripts written and run at once while
// other goroutines fork without pause all start. With os.WriteFile in place
// of Write, some fail with "text file busy" (golang.org/issue/22315).
func TestAScriptWrittenBesideForksRuns(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	var forks sync.WaitGroup
	for i := 0; i < 4; i++ {
		forks.Add(1)
		go func() {
			defer forks.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
			}
		}()
	}
	defer func() { close(stop); forks.Wait() }()
	for i := 0; i < 300; i++ {
		path := filepath.Join(dir, "s"+strconv.Itoa(i)+".sh")
		if err := Write(path, []byte("#!/bin/sh\nexit 0\n")); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(path).Run(); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
