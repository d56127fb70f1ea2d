// Package commalist reads the comma-separated lists of flags, environment
// variables and metadata ("a, b,,c"): one rule for every place that takes
// one.
package commalist

import "strings"

// Split returns the items of the comma-separated list s, each with the
// blanks around it trimmed; empty items are dropped, so "" and " , " give
// nil.
func Split(s string) []string {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}
