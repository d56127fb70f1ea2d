// Package examples holds Drover's example tasks, embedded so that
// `drover dev` can install them into its data directory wherever the binary
// runs. The files themselves are in tasks/; the Go handler is in
// gohandler/.
package examples

import "embed"

// Tasks holds tasks/*: the example task programs (hello.sh, hello.py).
//
//go:embed tasks
var Tasks embed.FS
