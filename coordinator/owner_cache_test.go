package coordinator

import (
	"encoding/json"
	"testing"
)

// The owner cache hands back the JSON of the owner asked for: the same
// bytes for the same owner (New aside: it is not stored), new bytes for any
// other member, node or generation, never a stale one.
func TestOwnerCacheEncodesTheOwnerAskedFor(t *testing.T) {
	var c ownerCache
	a := Owner{Member: "a", MemberPath: "/members/a-1", Generation: 1}
	decode := func(data []byte) Owner {
		t.Helper()
		var o Owner
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	first, err := c.encode(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(first); got != a {
		t.Fatalf("want %+v, have %+v", a, got)
	}
	newA := a
	newA.New = true
	again, _ := c.encode(newA)
	if &again[0] != &first[0] {
		t.Error("the same owner (New aside) was encoded again, not reused")
	}
	for _, o := range []Owner{
		{Member: "a", MemberPath: "/members/a-1", Generation: 2},
		{Member: "b", MemberPath: "/members/a-1", Generation: 2},
		{Member: "b", MemberPath: "/members/b-7", Generation: 2},
		a,
	} {
		data, err := c.encode(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := decode(data); got != o {
			t.Errorf("want %+v, have %+v", o, got)
		}
	}
}
