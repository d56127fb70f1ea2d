package config

import (
	"fmt"
	"math/big"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Setting is one value given on the command line.
type Setting struct {
	Key   string // the setting's key, e.g. "worker.name"
	Value string // as typed; lists are comma-separated
	Flag  string // the flag that carried it, for messages, e.g. "--name"
}

// Load returns the effective configuration: the defaults, then the file at
// path (none when path is ""; HCL, or HCL's JSON form when the name ends in
// .json), then the DROVER_* variables in env (os.Environ's form; empty
// values are ignored), then flags in order. hostname is the default worker
// name.
//
// It fails with Errors listing every problem: a syntax error or an unknown
// attribute names the file, line and column; a bad value names where it
// came from and its key; Validate's findings follow. Errors wraps
// drover.ErrInvalidConfig.
func Load(path string, env []string, flags []Setting, hostname string) (*Config, error) {
	c := Default(hostname)
	c.origins = map[string]origin{}
	var errs Errors
	if path != "" {
		errs = append(errs, c.loadFile(path)...)
	}
	errs = append(errs, c.loadEnv(env)...)
	for _, s := range flags {
		f, ok := lookupField(s.Key)
		if !ok {
			errs = append(errs, &FieldError{Where: "flag " + s.Flag, Key: s.Key, Msg: "no such setting (see `drover config check --keys`)"})
			continue
		}
		if err := f.setString(c, s.Value); err != nil {
			errs = append(errs, &FieldError{Where: "flag " + s.Flag, Key: s.Key, Msg: err.Error()})
			continue
		}
		c.origins[s.Key] = origin{what: "flag " + s.Flag}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c.finish()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Origin says where key's value came from: "file:line:col", "env
// DROVER_X", "flag --x", or "default".
func (c *Config) Origin(key string) string {
	if o, ok := c.origins[key]; ok {
		return o.what
	}
	return "default"
}

func (c *Config) loadEnv(env []string) Errors {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var errs Errors
	for _, f := range fields {
		name := EnvName(f.key)
		v, ok := vars[name]
		if !ok || v == "" {
			continue
		}
		if err := f.setString(c, v); err != nil {
			errs = append(errs, &FieldError{Where: "env " + name, Key: f.key, Msg: err.Error()})
			continue
		}
		c.origins[f.key] = origin{what: "env " + name}
	}
	return errs
}

// loadFile decodes the HCL file at path over c.
func (c *Config) loadFile(path string) Errors {
	src, err := os.ReadFile(path)
	if err != nil {
		return Errors{{Where: path, Msg: fmt.Sprintf("read configuration: %v", err)}}
	}
	p := hclparse.NewParser()
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		file, diags = p.ParseJSON(src, path)
	} else {
		file, diags = p.ParseHCL(src, path)
	}
	if diags.HasErrors() {
		return diagErrors(diags, "")
	}
	c.File = path
	return c.decodeBody(file.Body, "", schemaTree())
}

// node is one level of the settings tree: the attributes and blocks that
// may appear in one body.
type node struct {
	attrs  map[string]field
	blocks map[string]*node
}

// schemaTree builds the tree of bodies from the dotted keys.
func schemaTree() *node {
	root := &node{attrs: map[string]field{}, blocks: map[string]*node{}}
	for _, f := range fields {
		parts := strings.Split(f.key, ".")
		n := root
		for _, b := range parts[:len(parts)-1] {
			child, ok := n.blocks[b]
			if !ok {
				child = &node{attrs: map[string]field{}, blocks: map[string]*node{}}
				n.blocks[b] = child
			}
			n = child
		}
		n.attrs[parts[len(parts)-1]] = f
	}
	return root
}

func (n *node) schema() *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, name := range sortedKeys(n.attrs) {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	for _, name := range sortedKeys(n.blocks) {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: name})
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decodeBody sets every attribute of body (at prefix, "" or "redis.") and
// recurses into its blocks.
func (c *Config) decodeBody(body hcl.Body, prefix string, n *node) Errors {
	content, diags := body.Content(n.schema())
	errs := diagErrors(diags, "")
	attrs := make([]*hcl.Attribute, 0, len(content.Attributes))
	for _, a := range content.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].Range.Start.Byte < attrs[j].Range.Start.Byte })
	for _, a := range attrs {
		f := n.attrs[a.Name]
		rng := a.Expr.Range()
		if err := c.setValue(f, a.Expr); err != nil {
			errs = append(errs, &FieldError{Where: rangeString(&rng), Key: f.key, Msg: err.Error()})
			continue
		}
		c.origins[f.key] = origin{what: rangeString(&rng), rng: &rng}
	}
	seen := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		if first, dup := seen[b.Type]; dup {
			errs = append(errs, &FieldError{Where: rangeString(&b.DefRange), Key: prefix + b.Type,
				Msg: fmt.Sprintf("duplicate block; the first is at %s", rangeString(&first))})
			continue
		}
		seen[b.Type] = b.DefRange
		errs = append(errs, c.decodeBody(b.Body, prefix+b.Type+".", n.blocks[b.Type])...)
	}
	return errs
}

// setValue evaluates expr (constants only: no variables or functions) and
// stores it in the field.
func (c *Config) setValue(f field, expr hcl.Expression) error {
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return fmt.Errorf("%s", strings.TrimSpace(diagErrors(diags, "").Error()))
	}
	if v.IsNull() {
		return fmt.Errorf("want %s, have null", f.kind)
	}
	switch p := f.ref(c).(type) {
	case *string:
		s, err := convert.Convert(v, cty.String)
		if err != nil {
			return fmt.Errorf("want %s, have %s", f.kind, v.Type().FriendlyName())
		}
		*p = s.AsString()
	case *[]string:
		if v.Type() == cty.String { // a single item
			*p = []string{v.AsString()}
			return nil
		}
		l, err := convert.Convert(v, cty.List(cty.String))
		if err != nil || l.IsNull() {
			return fmt.Errorf("want %s like [\"a\", \"b\"], have %s", f.kind, v.Type().FriendlyName())
		}
		items := []string{}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				return fmt.Errorf("want %s, have a null item", f.kind)
			}
			items = append(items, e.AsString())
		}
		*p = items
	case *int:
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return fmt.Errorf("want %s, have %s", f.kind, v.Type().FriendlyName())
		}
		bf := n.AsBigFloat()
		i, acc := bf.Int64()
		if !bf.IsInt() || acc != big.Exact || int64(int(i)) != i {
			return fmt.Errorf("want %s, have %s", f.kind, bf.Text('g', -1))
		}
		*p = int(i)
	case *bool:
		b, err := convert.Convert(v, cty.Bool)
		if err != nil {
			return fmt.Errorf("want %s, have %s", f.kind, v.Type().FriendlyName())
		}
		*p = b.True()
	case *float64:
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return fmt.Errorf("want %s, have %s", f.kind, v.Type().FriendlyName())
		}
		*p, _ = n.AsBigFloat().Float64()
	default: // durations
		if v.Type() != cty.String {
			return fmt.Errorf("want %s (a quoted string), have %s", f.kind, v.Type().FriendlyName())
		}
		return f.setString(c, v.AsString())
	}
	return nil
}
