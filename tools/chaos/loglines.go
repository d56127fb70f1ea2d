package main

import (
	"bufio"
	"fmt"
	"os"
)

// eachLine calls f with every line of the log at path, until f returns
// false. Lines up to 1 MB are read whole (a worker's log line can carry a
// long error).
func eachLine(path string, f func(line string) (more bool)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !f(sc.Text()) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
