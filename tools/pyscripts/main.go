// Command pyscripts writes the Lua scripts the Python and Node clients run
// (python/drover/scripts/*.lua, clients/node/scripts/*.lua) from the Go
// sources in queue/, so that they cannot drift: each client carries
// byte-for-byte the scripts the Go code runs. It also writes rules.json,
// the producer rules (queue.Rules: queue names, ids, task, attempts,
// delays) each client checks every message against before writing, and
// versions.json. Every output directory gets the same files. Run it from
// the module root after changing a script or a rule:
//
//	go run ./tools/pyscripts
//
// TestCommittedScriptsMatchGo fails while the committed copy differs.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/drover-dev/drover/queue"
)

// scripts maps each file the Python and Node clients read to the Go
// constant it holds. The lone scripts (enqueue-one, enqueue-many,
// enqueue-spread) are the Go producer's calls for messages with generated
// ids due now; the clients run them for the same messages.
var scripts = map[string]string{
	"enqueue.lua":         "enqueueSource",
	"enqueue_one.lua":     "enqueueOneSource",
	"enqueue_many.lua":    "enqueueManySource",
	"enqueue_spread.lua":  "enqueueSpreadSource",
	"revoke.lua":          "revokeSource",
	"record_outcomes.lua": "recordOutcomesSource",
	"job_status.lua":      "jobStatusSource",
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := Generate(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pyscripts:", err)
		os.Exit(1)
	}
	for _, dir := range OutDirs {
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(root, dir, name), []byte(body), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "pyscripts:", err)
				os.Exit(1)
			}
		}
	}
}

// OutDirs are where the generated files go, relative to the module root:
// one directory per language client, each getting every file.
var OutDirs = []string{"python/drover/scripts", "clients/node/scripts"}

var versionRE = regexp.MustCompile(`^-- drover ([a-z-]+) v([0-9]+)`)

// Generate returns the generated files by name: one .lua file per script,
// versions.json (script name → version, from each script's first line;
// "layout" is the enqueue script's version) and rules.json (queue.Rules).
func Generate(root string) (map[string]string, error) {
	consts, err := stringConsts(filepath.Join(root, "queue", "scripts.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	versions := map[string]int{}
	names := make([]string, 0, len(scripts))
	for name := range scripts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		src, ok := consts[scripts[name]]
		if !ok {
			return nil, fmt.Errorf("queue/scripts.go has no string constant %s", scripts[name])
		}
		m := versionRE.FindStringSubmatch(src)
		if m == nil {
			return nil, fmt.Errorf("%s does not start with \"-- drover <name> v<N>\"", scripts[name])
		}
		v, _ := strconv.Atoi(m[2])
		versions[m[1]] = v
		out[name] = src
	}
	versions["layout"] = versions["enqueue"]
	var b strings.Builder
	b.WriteString("{\n")
	keys := make([]string, 0, len(versions))
	for k := range versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		sep := ","
		if i == len(keys)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %q: %d%s\n", k, versions[k], sep)
	}
	b.WriteString("}\n")
	out["versions.json"] = b.String()
	rules, err := json.MarshalIndent(queue.Rules(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("producer rules: %w", err)
	}
	out["rules.json"] = string(rules) + "\n"
	return out, nil
}

// stringConsts evaluates the package-level string constants of a Go file:
// literals, other constants of the file, and their concatenation.
func stringConsts(path string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	exprs := map[string]ast.Expr{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					exprs[n.Name] = vs.Values[i]
				}
			}
		}
	}
	out := map[string]string{}
	var eval func(e ast.Expr, depth int) (string, bool)
	eval = func(e ast.Expr, depth int) (string, bool) {
		if depth > 32 {
			return "", false
		}
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		case *ast.Ident:
			if v, ok := exprs[x.Name]; ok {
				return eval(v, depth+1)
			}
		case *ast.ParenExpr:
			return eval(x.X, depth+1)
		case *ast.BinaryExpr:
			if x.Op == token.ADD {
				l, ok1 := eval(x.X, depth+1)
				r, ok2 := eval(x.Y, depth+1)
				return l + r, ok1 && ok2
			}
		}
		return "", false
	}
	for name, e := range exprs {
		if s, ok := eval(e, 0); ok {
			out[name] = s
		}
	}
	return out, nil
}
