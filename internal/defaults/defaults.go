// Package defaults fills the unset fields of a Config with their defaults.
package defaults

// Number is a field that Positive defaults: a count, a size or a
// duration (time.Duration is an int64).
type Number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Positive returns v when it is above zero, else def: a field left at zero,
// or set below it, takes its default. (cmp.Or defaults only a zero value:
// it keeps a negative one.)
func Positive[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
