//go:build !race

package queue

// raceEnabled: see race_on_test.go.
const raceEnabled = false
