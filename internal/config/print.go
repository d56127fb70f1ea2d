package config

import (
	"strconv"
	"strings"
)

// redacted replaces secret values when the configuration is printed.
const redacted = "(redacted)"

// Effective is one setting of the effective configuration as printed.
type Effective struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Origin string `json:"origin"` // "default", "file:line:col", "env DROVER_X", "flag --x"
}

// Effective lists every setting with its value (secrets redacted when set)
// and origin, in the order of Keys.
func (c *Config) Effective() []Effective {
	out := make([]Effective, 0, len(fields))
	for _, f := range fields {
		v := f.value(c)
		if s, ok := v.(string); ok && f.secret && s != "" {
			v = redacted
		}
		out = append(out, Effective{Key: f.key, Value: v, Origin: c.Origin(f.key)})
	}
	return out
}

// HCL renders the effective configuration as a drover.hcl file (secrets
// redacted); a value that is not the default is followed by a comment saying
// where it came from.
func (c *Config) HCL() []byte {
	var b strings.Builder
	open := []string{} // the blocks currently open, outermost first
	for _, e := range c.Effective() {
		parts := strings.Split(e.Key, ".")
		blocks, name := parts[:len(parts)-1], parts[len(parts)-1]
		common := 0
		for common < len(open) && common < len(blocks) && open[common] == blocks[common] {
			common++
		}
		for len(open) > common {
			open = open[:len(open)-1]
			b.WriteString(strings.Repeat("  ", len(open)) + "}\n")
		}
		for _, blk := range blocks[common:] {
			if len(open) == 0 {
				b.WriteString("\n")
			}
			b.WriteString(strings.Repeat("  ", len(open)) + blk + " {\n")
			open = append(open, blk)
		}
		line := strings.Repeat("  ", len(open)) + name + " = " + hclLiteral(e.Value)
		if e.Origin != "default" {
			line += " # from " + e.Origin
		}
		b.WriteString(line + "\n")
	}
	for len(open) > 0 {
		open = open[:len(open)-1]
		b.WriteString(strings.Repeat("  ", len(open)) + "}\n")
	}
	return []byte(b.String())
}

// hclLiteral writes v as an HCL literal.
func hclLiteral(v any) string {
	switch v := v.(type) {
	case string:
		return hclString(v)
	case int:
		return strconv.Itoa(v)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []string:
		items := make([]string, len(v))
		for i, s := range v {
			items[i] = hclString(s)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return "null"
}

// hclString quotes s; template sequences are escaped so they stay literal.
func hclString(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}
