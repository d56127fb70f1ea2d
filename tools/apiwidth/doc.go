// Package apiwidth holds, in its test, the width rule of the packages a
// newcomer reads first (issue 42): no exported type of theirs has more
// than 15 exported methods and no exported interface (a port) more than
// 12, the way kafka-go's coordinator port has 8. It is tooling: nothing
// imports it.
package apiwidth
