package coordinator

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/drover-dev/drover"
)

// Bounds of a Session's configShapes: past them a config is decoded as it
// always was, which costs CPU, not correctness.
const (
	maxConfigShapes     = 1024
	maxConfigShapeBytes = 16 << 10 // a shape longer than this is not kept
	maxConfigShapesSize = 1 << 20  // the kept shapes' bytes together
)

// configShapes decodes the queue configs a member reads as it claims by
// their shape: the node's JSON after its leading name. A fleet's queues are
// configured alike (a family's template, or the defaults: every
// `{"name":"<q>","backoff":{},"limits":{}}`), so a member claiming 10,000
// queues decodes a few shapes instead of 10,000 documents (decoding was 7%
// of the bench process's CPU in a start at a million queues;
// docs/decisions.md, "Issue 43: a config decoded once a shape; the
// observer's diff by pointer"). The zero value is ready.
type configShapes struct {
	mu     sync.Mutex
	shapes map[string]drover.QueueConfig // the JSON after the name's closing quote → its config, Name empty
	size   int
}

// decode is decodeQueue(p, name, nd) with its task routes shared through
// routes: the same entry, error included, for any data. A config whose
// JSON begins with its own name (every config Drover writes) is looked up
// by the rest; a shape seen first is decoded once and kept.
func (c *configShapes) decode(routes *routeInterner, p, name string, nd nodeData) QueueEntry {
	key, ok := configShapeKey(nd.data, name)
	if !ok || len(key) > maxConfigShapeBytes {
		return routes.shared(decodeQueue(p, name, nd))
	}
	c.mu.Lock()
	cfg, hit := c.shapes[string(key)]
	c.mu.Unlock()
	if !hit {
		// The shape's own document: the same JSON with an empty name, so
		// it is valid exactly when the node's is. A later "name" key
		// (JSON's last one wins, in any case) names the queue itself: not
		// a shape; decoded as a whole, as is an invalid document, so that
		// its error reads as it always did.
		doc := make([]byte, 0, len(`{"name":""`)+len(key))
		doc = append(append(doc, `{"name":""`...), key...)
		if err := json.Unmarshal(doc, &cfg); err != nil || cfg.Name != "" {
			return routes.shared(decodeQueue(p, name, nd))
		}
		cfg.Tasks = routes.intern(cfg.Tasks)
		c.keep(string(key), cfg)
	}
	cfg.Name = name
	// What the entries share stays read-only: Tasks is shared as
	// ConfigWatch.Read says; the rest the caller may keep and change.
	cfg.Tags = slices.Clone(cfg.Tags)
	if r := cfg.Outcomes.Retention; r != nil {
		d := *r
		cfg.Outcomes.Retention = &d
	}
	return QueueEntry{Name: name, Version: nd.stat.Version, Config: cfg}
}

func (c *configShapes) keep(key string, cfg drover.QueueConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.shapes) >= maxConfigShapes || c.size+len(key) > maxConfigShapesSize {
		return
	}
	if c.shapes == nil {
		c.shapes = map[string]drover.QueueConfig{}
	}
	if _, ok := c.shapes[key]; !ok {
		c.shapes[key] = cfg
		c.size += len(key)
	}
}

// configShapeKey returns what follows the name in data, when data begins
// with `{"name":"<name>"` written as name's own bytes. A name holding a
// quote, a backslash or a control character is never matched (JSON
// escapes them), nor one that is not UTF-8; any other name's bytes,
// between quotes, are that name's JSON string.
func configShapeKey(data []byte, name string) ([]byte, bool) {
	const open = `{"name":"`
	if !bytes.HasPrefix(data, []byte(open)) || !plainJSONString(name) {
		return nil, false
	}
	rest := data[len(open):]
	if len(rest) <= len(name) || string(rest[:len(name)]) != name || rest[len(name)] != '"' {
		return nil, false
	}
	return rest[len(name)+1:], true
}

// plainJSONString reports whether s, between quotes, is the JSON string s.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.ValidString(s)
}
