package scheduler

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsExamplesAreValid keeps docs/scheduler.md honest: its JSON example
// and every definition in its redis-cli commands parse and validate.
func TestDocsExamplesAreValid(t *testing.T) {
	doc, err := os.ReadFile("../docs/scheduler.md")
	if err != nil {
		t.Fatalf("read docs: %v", err)
	}
	text := string(doc)
	start := strings.Index(text, "```json\n")
	end := strings.Index(text[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatalf("docs/scheduler.md has no json example")
	}
	if _, err := ParseDefinition([]byte(text[start+8 : start+8+end])); err != nil {
		t.Fatalf("the JSON example does not validate: %v", err)
	}
	hset := regexp.MustCompile(`(?m)^HSET drover:sched:(\S+) definition '([^']*)'$`)
	found := hset.FindAllStringSubmatch(text, -1)
	if len(found) < 3 {
		t.Fatalf("want at least 3 HSET examples, have %d", len(found))
	}
	for _, m := range found {
		if _, err := parseStored(m[1], []byte(m[2])); err != nil {
			t.Errorf("HSET example for %s does not validate: %v", m[1], err)
		}
		if !strings.Contains(text, "ZADD drover:schedule 0 "+m[1]+"\n") {
			t.Errorf("HSET example for %s is not followed by its ZADD", m[1])
		}
	}
}
