package ops

import (
	"path"
	"strings"
	"unicode/utf8"
)

// glob is a shell pattern (path.Match's syntax and answers) compiled once
// for matching many names: literal runs are compared as strings, classes
// are parsed once. path.Match re-reads the whole pattern at every position
// it tries, so its cost is the pattern's length × the name's length per
// name (a 256-byte pattern over 100,000 names of 200 bytes: 10 s of CPU);
// a glob's is the number of its pieces × the name's length (issue 41).
type glob struct {
	chunks []globChunk
}

// globChunk is a run of single-character operators and literals, after
// any number of stars (star).
type globChunk struct {
	star   bool
	pieces []globPiece
}

// globPiece is a literal (lit, one or more bytes), one character (any:
// "?") or a character class.
type globPiece struct {
	lit     string
	any     bool
	class   bool
	negated bool
	ascii   [2]uint64 // class members below 128
	ranges  [][2]rune // class ranges reaching 128 or above
}

// compileGlob compiles p, which must be valid (Match.Validate).
func compileGlob(p string) glob {
	var g glob
	for len(p) > 0 {
		c := globChunk{}
		for len(p) > 0 && p[0] == '*' {
			p, c.star = p[1:], true
		}
		end := chunkEnd(p)
		c.pieces = compilePieces(p[:end])
		p = p[end:]
		g.chunks = append(g.chunks, c)
	}
	return g
}

// chunkEnd is where the chunk starting p ends: at the first star outside
// a class (path's scanChunk).
func chunkEnd(p string) int {
	inrange := false
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) {
				i++
			}
		case '[':
			inrange = true
		case ']':
			inrange = false
		case '*':
			if !inrange {
				return i
			}
		}
	}
	return len(p)
}

func compilePieces(c string) []globPiece {
	var out []globPiece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, globPiece{lit: lit.String()})
			lit.Reset()
		}
	}
	for len(c) > 0 {
		switch c[0] {
		case '?':
			flush()
			out = append(out, globPiece{any: true})
			c = c[1:]
		case '[':
			flush()
			pc := globPiece{class: true}
			c = c[1:]
			if len(c) > 0 && c[0] == '^' {
				pc.negated, c = true, c[1:]
			}
			for n := 0; ; n++ {
				if c[0] == ']' && n > 0 {
					c = c[1:]
					break
				}
				var lo, hi rune
				lo, c = classRune(c)
				hi = lo
				if c[0] == '-' {
					hi, c = classRune(c[1:])
				}
				for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
					pc.ascii[r/64] |= 1 << (r % 64)
				}
				if hi >= utf8.RuneSelf {
					pc.ranges = append(pc.ranges, [2]rune{max(lo, utf8.RuneSelf), hi})
				}
			}
			out = append(out, pc)
		case '\\':
			c = c[1:]
			fallthrough
		default:
			lit.WriteByte(c[0])
			c = c[1:]
		}
	}
	flush()
	return out
}

// classRune reads a possibly escaped character of a class (path's getEsc
// on a valid pattern).
func classRune(c string) (rune, string) {
	if c[0] == '\\' {
		c = c[1:]
	}
	r, n := utf8.DecodeRuneInString(c)
	return r, c[n:]
}

func (pc *globPiece) inClass(r rune) bool {
	in := false
	if r >= 0 && r < utf8.RuneSelf {
		in = pc.ascii[r/64]&(1<<(r%64)) != 0
	} else {
		for _, rg := range pc.ranges {
			in = in || rg[0] <= r && r <= rg[1]
		}
	}
	return in != pc.negated
}

// matchPieces reports whether pieces match the start of s, and what is
// left of s after them.
func matchPieces(pieces []globPiece, s string) (string, bool) {
	for i := range pieces {
		pc := &pieces[i]
		switch {
		case pc.lit != "":
			if !strings.HasPrefix(s, pc.lit) {
				return "", false
			}
			s = s[len(pc.lit):]
		case len(s) == 0:
			return "", false
		case pc.any:
			if s[0] == '/' {
				return "", false
			}
			_, n := utf8.DecodeRuneInString(s)
			s = s[n:]
		default:
			r, n := utf8.DecodeRuneInString(s)
			if !pc.inClass(r) {
				return "", false
			}
			s = s[n:]
		}
	}
	return s, true
}

// match is path.Match(pattern, name) for the pattern g was compiled from:
// the same walk (each chunk at the first position that leaves the rest
// matchable, the last one at the end of the name), on compiled pieces.
func (g glob) match(name string) bool {
Chunks:
	for k, c := range g.chunks {
		last := k == len(g.chunks)-1
		if c.star && len(c.pieces) == 0 {
			return strings.IndexByte(name, '/') < 0
		}
		if t, ok := matchPieces(c.pieces, name); ok && (len(t) == 0 || !last) {
			name = t
			continue
		}
		if c.star {
			for i := 0; i < len(name) && name[i] != '/'; i++ {
				if t, ok := matchPieces(c.pieces, name[i+1:]); ok && (len(t) == 0 || !last) {
					name = t
					continue Chunks
				}
			}
		}
		return false
	}
	return len(name) == 0
}

// validGlob reports whether p is a valid shell pattern.
func validGlob(p string) error {
	_, err := path.Match(p, "")
	return err
}
