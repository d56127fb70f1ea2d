package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/drover-dev/drover"
)

// origin says where a setting's value came from.
type origin struct {
	what string     // "drover.hcl:12:3", "env DROVER_X", "flag --name"
	rng  *hcl.Range // the attribute's value in the file, for file values
}

// FieldError is one problem with one setting. Error reads
// "<where>: <key>: <problem>", where <where> is "file:line:col" for a value
// from the file, "env DROVER_X" or "flag --x".
type FieldError struct {
	Where string // where the value came from; "" for defaults
	Key   string // the setting's key, e.g. "worker.capacity"; "" for syntax errors
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every FieldError an drover.ErrInvalidConfig.
func (e *FieldError) Unwrap() error { return drover.ErrInvalidConfig }

// Errors is every problem found, in file order then key order. Its Error
// puts one problem on each line.
type Errors []*FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so errors.Is(err, drover.ErrInvalidConfig)
// and errors.As(err, **FieldError) work.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// err returns es as an error, nil when empty.
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// rangeString formats an HCL range as file:line:col.
func rangeString(r *hcl.Range) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// diagErrors turns HCL diagnostics into FieldErrors.
func diagErrors(diags hcl.Diagnostics, key string) Errors {
	var out Errors
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		out = append(out, &FieldError{Where: rangeString(d.Subject), Key: key, Msg: msg})
	}
	return out
}
