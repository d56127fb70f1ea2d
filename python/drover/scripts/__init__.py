"""Generated from queue/scripts.go by `go run ./internal/pyscripts`: do not edit."""
