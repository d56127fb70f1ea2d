// Package toy is the A/B tool's test subject at its second commit.
package toy

// Widgets is what one operation makes: revision B makes 20.
func Widgets() []int { return make([]int, 20) }
