//go:build race

package queue

// raceEnabled says the tests run under -race, where sync.Pool drops a
// quarter of what it is given at random (so that races on pooled values
// show), and an allocation count through a pool is higher and varies.
const raceEnabled = true
