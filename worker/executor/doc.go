// Package executor runs one task attempt: a command as a child process (argv,
// never a shell, the envelope on stdin, its own process group, a deadline,
// resource limits and run-as-user through a re-exec trampoline), a
// registered Go handler in a re-executed child, or, opt-in, a handler inline
// in the worker process. The worker package calls it through its own small
// Executor interface; executor.go states the rules a task runs under.
package executor
