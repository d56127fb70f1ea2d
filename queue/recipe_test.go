package queue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// enqueueRecipe is the redis-cli recipe of docs/redis-schema.md, verbatim: it
// enqueues one message by hand with the documented enqueue script (saved as
// enqueue.lua). TestSchemaDocQuotesTheCode checks that the doc holds it and
// the script; the tests below run it.
const enqueueRecipe = `redis-cli EVAL "$(cat enqueue.lua)" 6 'drover:{emails}:log' 'drover:{emails}:msg' 'drover:{emails}:seq' 'drover:{emails}:delayed' 'drover:{emails}:seen' 'drover:{emails}:owner' 86400000 drover:wakeup-unowned emails welcome-42 '{"id":"welcome-42","queue":"emails","task":"send-welcome","args":{"user":42},"attempt":0,"enqueued_at":"2025-01-01T12:00:00Z"}' 0 1
redis-cli SADD drover:queues emails
`

const schemaDoc = "../docs/redis-schema.md"

// The schema doc quotes the enqueue script and the recipe exactly as the
// code has them.
func TestSchemaDocQuotesTheCode(t *testing.T) {
	doc, err := os.ReadFile(schemaDoc)
	if err != nil {
		t.Fatalf("read the schema doc: %v", err)
	}
	for what, want := range map[string]string{
		"the enqueue script":    "```lua\n" + enqueueSource + "```\n",
		"the redis-cli recipe":  "```sh\n" + enqueueRecipe + "```\n",
		"the revoke script":     "```lua\n" + revokeSource + "```\n",
		"the retry-dead script": "```lua\n" + retryDeadSource + "```\n",
		"the purge-dead script": "```lua\n" + purgeDeadSource + "```\n",
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("%s does not quote %s verbatim; want it to contain:\n%s", schemaDoc, what, want)
		}
	}
}

var _ = addContractCases(contractCase{"RedisCLIRecipe", testRedisCLIRecipe})

// The recipe, run through the client with the test's key prefix, creates a
// message that ReadAfter returns; run again, it is a duplicate.
func testRedisCLIRecipe(t *testing.T, rdb redis.UniversalClient) {
	s := newTestStore(t, rdb, nil)
	replies := runRecipe(t, rdb, s.Prefix())
	if pos, ok := firstInt(replies[0]); !ok || pos <= 0 {
		t.Fatalf("recipe enqueue: want a position, have %v", replies[0])
	}
	checkRecipeMessage(t, s)
	if pos, ok := firstInt(runRecipe(t, rdb, s.Prefix())[0]); !ok || pos != -1 {
		t.Fatalf("recipe run twice: want -1 (known id), have %v", pos)
	}
	if es := readAll(t, s, "emails", 0, 10); len(es) != 1 {
		t.Fatalf("after running the recipe twice: want one message, have %d", len(es))
	}
}

// The recipe works with the real redis-cli and a shell, as printed.
func TestRedisCLIRecipeWithRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found (%v): install it with `apt-get install redis-tools` (Debian) or your Redis package", err)
	}
	srv := testenv.Redis(t)
	host, port, _ := strings.Cut(srv.Addr, ":")
	rdb := testClient(t, ClientOptions{Addrs: []string{srv.Addr}})
	s := newTestStore(t, rdb, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "enqueue.lua"), []byte(enqueueSource), 0o644); err != nil {
		t.Fatal(err)
	}
	// The prefix holds only letters, digits, '-' and '_': safe in the line.
	recipe := strings.ReplaceAll(enqueueRecipe, "drover:", s.Prefix()+":")
	recipe = strings.ReplaceAll(recipe, "redis-cli ", cli+" -h "+host+" -p "+port+" ")
	cmd := exec.Command("sh", "-e", "-c", recipe)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run the recipe: %v\n%s", err, out)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); strings.HasPrefix(first, "-1") || strings.HasPrefix(first, "(error)") || first == "" {
		t.Fatalf("recipe output: want a position first, have %q", out)
	}
	checkRecipeMessage(t, s)
}

// checkRecipeMessage asserts the recipe's message is readable and registered.
func checkRecipeMessage(t *testing.T, s *Store) {
	t.Helper()
	es := readAll(t, s, "emails", 0, 10)
	if len(es) != 1 {
		t.Fatalf("after the recipe: want one message in emails, have %d", len(es))
	}
	m := mustDecode(t, es[0])
	if m.ID != "welcome-42" || m.Task != "send-welcome" || string(m.Args) != `{"user":42}` || m.Attempt != 0 {
		t.Fatalf("recipe message: want welcome-42 / send-welcome / {\"user\":42}, have %+v", m)
	}
	qs, err := s.Inspector().Queues(context.Background())
	if err != nil || len(qs) != 1 || qs[0] != "emails" {
		t.Fatalf("Queues after the recipe: want [emails], have %v, %v", qs, err)
	}
}

// runRecipe runs every line of the recipe through rdb, with the key prefix
// replaced by prefix, and returns the replies. "$(cat enqueue.lua)" is the
// enqueue script (the file the doc tells to save).
func runRecipe(t *testing.T, rdb redis.UniversalClient, prefix string) []any {
	t.Helper()
	ctx := context.Background()
	var replies []any
	for _, line := range strings.Split(strings.TrimSpace(enqueueRecipe), "\n") {
		words := shellWords(t, line)
		if len(words) < 2 || words[0] != "redis-cli" {
			t.Fatalf("recipe line %q: want redis-cli <command>", line)
		}
		for i, w := range words {
			if rest, ok := strings.CutPrefix(w, "drover:"); ok {
				words[i] = prefix + ":" + rest
			}
		}
		argv := make([]any, len(words)-1)
		for i, w := range words[1:] {
			argv[i] = w
		}
		reply, err := rdb.Do(ctx, argv...).Result()
		if err != nil {
			t.Fatalf("recipe line %q: %v", line, err)
		}
		replies = append(replies, reply)
	}
	return replies
}

// scriptWord is how the recipe passes the script file's content.
const scriptWord = `"$(cat enqueue.lua)"`

// shellWords splits a line as sh does for plain and single-quoted words (the
// only quoting the recipe uses) and scriptWord, which becomes the script.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	const placeholder = "ENQUEUE-SCRIPT"
	line = strings.ReplaceAll(line, scriptWord, placeholder)
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"\$`+"`", r):
			t.Fatalf("recipe line %q: unquoted %q: keep the recipe to plain and single-quoted words", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("recipe line %q: unterminated quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	for i, w := range words {
		if w == placeholder {
			words[i] = enqueueSource
		}
	}
	return words
}

// firstInt returns the first element of an array reply as an integer.
func firstInt(reply any) (int64, bool) {
	vals, ok := reply.([]any)
	if !ok || len(vals) == 0 {
		return 0, false
	}
	v, ok := vals[0].(int64)
	return v, ok
}
