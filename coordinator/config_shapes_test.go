package coordinator

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/go-zookeeper/zk"
)

// TestAConfigDecodedByItsShapeIsTheWholeDecode: for every kind of node data
// (Drover's own, a family's with routes, tags and a retention, ones written
// by hand, corrupt ones, names JSON escapes), the entry decoded through the
// shapes, first and again, equals the whole decode, error text included.
func TestAConfigDecodedByItsShapeIsTheWholeDecode(t *testing.T) {
	family := `,"concurrency":2,"timeout":"30s","backoff":{"base":"1s"},"tags":["gpu"],"tasks":{"resize":{"command":["/bin/resize"]}},"limits":{"open_files":64},"outcomes":{"retention":"1h","max":10},"family":"img"}`
	cases := []struct{ name, data string }{
		{"q00001", `{"name":"q00001","backoff":{},"limits":{}}`},
		{"q00002", `{"name":"q00002","backoff":{},"limits":{}}`},
		{"q00003", `{"name":"q00003"}`},
		{"img-1", `{"name":"img-1"` + family},
		{"img-2", `{"name":"img-2"` + family},
		{"q-trailing", `{"name":"q-trailing",}`},
		{"q-again", `{"name":"q-again","weight":2,"name":"other"}`},
		{"q-upper", `{"name":"q-upper","NAME":"other"}`},
		{"q-blank", `{"name":"q-blank","name":""}`},
		{"q-bad", `{"name":"q-bad","weight":"x"}`},
		{"q-cut", `{"name":"q-cut","backoff":{`},
		{"q-other", `{"name":"q-otherwise","backoff":{}}`},
		{"q-short", `{"name":"q-sh`},
		{"q-spaced", `{ "name":"q-spaced"}`},
		{"ünï-<&>", `{"name":"ünï-<&>","weight":3}`},
		{"ünï-<&>x", `{"name":"\u00fcn\u00ef-\u003c\u0026\u003ex","weight":3}`},
		{`q"quoted`, `{"name":"q\"quoted","weight":3}`},
		{`q\back`, `{"name":"q\\back","weight":3}`},
		{"q-empty", ``},
	}
	var routes, wholeRoutes routeInterner
	var shapes configShapes
	for round := 0; round < 2; round++ {
		for i, c := range cases {
			nd := nodeData{data: []byte(c.data), stat: zk.Stat{Version: int32(i)}}
			p := "/queues/001/" + c.name
			got := shapes.decode(&routes, p, c.name, nd)
			want := wholeRoutes.shared(decodeQueue(p, c.name, nd))
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
				t.Errorf("round %d, %s: error %v, the whole decode's %v", round, c.data, got.Err, want.Err)
			}
			if got.Name != want.Name || got.Version != want.Version || !reflect.DeepEqual(got.Config, want.Config) {
				t.Errorf("round %d, %s:\n got %+v\nwant %+v", round, c.data, got, want)
			}
		}
	}
	// Kept: the default (q00001 and q00002 share it), the bare name, the
	// family's (both img queues), the weight of the plain unicode name and
	// the blank second name; not the corrupt ones, nor those whose JSON
	// names another queue or escapes the name.
	if len(shapes.shapes) != 5 {
		t.Errorf("kept %d shapes, want 5: %q", len(shapes.shapes), keysOf(shapes.shapes))
	}
}

// TestEntriesOfOneShapeShareOnlyTheirRoutes: what a caller may change in one
// entry (its tags, its retention) is its own; the task routes are the
// shared, read-only table ConfigWatch.Read documents.
func TestEntriesOfOneShapeShareOnlyTheirRoutes(t *testing.T) {
	var routes routeInterner
	var shapes configShapes
	rest := `,"tags":["gpu"],"tasks":{"a":{"command":["/bin/a"]}},"outcomes":{"retention":"1h"}}`
	a := shapes.decode(&routes, "/queues/0/a", "a", nodeData{data: []byte(`{"name":"a"` + rest)})
	b := shapes.decode(&routes, "/queues/0/b", "b", nodeData{data: []byte(`{"name":"b"` + rest)})
	if a.Err != nil || b.Err != nil || a.Config.Name != "a" || b.Config.Name != "b" {
		t.Fatalf("decoded %+v and %+v", a, b)
	}
	a.Config.Tags[0] = "cpu"
	*a.Config.Outcomes.Retention = 0
	if b.Config.Tags[0] != "gpu" || b.Config.Outcomes.Retention.Std() == 0 {
		t.Errorf("b changed with a: tags %v, retention %v", b.Config.Tags, *b.Config.Outcomes.Retention)
	}
	if reflect.ValueOf(a.Config.Tasks).Pointer() != reflect.ValueOf(b.Config.Tasks).Pointer() {
		t.Error("the two entries' task routes are not the shared table")
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkConfigDecode: a claim's config decode, a queue of the default
// shape each time (10,000 names), by the whole document and by its shape.
func BenchmarkConfigDecode(b *testing.B) {
	nds := make([]nodeData, 10000)
	names := make([]string, len(nds))
	for i := range nds {
		names[i] = fmt.Sprintf("q%05d", i)
		nds[i] = nodeData{data: []byte(`{"name":"` + names[i] + `","backoff":{},"limits":{}}`)}
	}
	b.Run("whole", func(b *testing.B) {
		var routes routeInterner
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k := i % len(nds)
			if e := routes.shared(decodeQueue("/q", names[k], nds[k])); e.Err != nil {
				b.Fatal(e.Err)
			}
		}
	})
	b.Run("shape", func(b *testing.B) {
		var routes routeInterner
		var shapes configShapes
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k := i % len(nds)
			if e := shapes.decode(&routes, "/q", names[k], nds[k]); e.Err != nil {
				b.Fatal(e.Err)
			}
		}
	})
}

// TestConfigShapesCopyEveryReferenceField: entries of one shape are copies
// of one decoded config, so each field that refers to memory (a slice, a
// map, a pointer) is either copied per entry in configShapes.decode or is
// shared read-only by contract. A field added to drover.QueueConfig that
// refers to memory fails here until decode says which it is.
func TestConfigShapesCopyEveryReferenceField(t *testing.T) {
	handled := map[string]bool{
		"Tags":               true, // cloned
		"Tasks":              true, // the shared route table (ConfigWatch.Read)
		"Outcomes.Retention": true, // cloned
	}
	var found []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(name+".", f.Type)
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				found = append(found, name)
				if !handled[name] {
					t.Errorf("QueueConfig.%s refers to memory that entries of one shape would share: copy it in configShapes.decode, or say it is shared", name)
				}
			}
		}
	}
	walk("", reflect.TypeOf(drover.QueueConfig{}))
	if len(found) != len(handled) {
		t.Errorf("reference fields %v, handled %v: a handled field is gone, drop it from the list", found, keysOf(handled))
	}
}
