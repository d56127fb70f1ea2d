// Package toy is the A/B tool's test subject at its first commit.
package toy

// Widgets is what one operation makes: revision A makes 10.
func Widgets() []int { return make([]int, 10) }
