"""Generated from queue/scripts.go by `go run ./tools/pyscripts`: do not edit."""
