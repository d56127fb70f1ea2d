package drover

import (
	"errors"
	"testing"
)

func TestFamiliesMatchLongestPrefix(t *testing.T) {
	fs := Families{
		{Name: "all-cust", Prefix: "cust"},
		{Name: "cust-eu", Prefix: "cust-eu-"},
		{Name: "cust", Prefix: "cust-"},
	}
	cases := []struct{ queue, want string }{
		{"cust-eu-42", "cust-eu"},
		{"cust-us-42", "cust"},
		{"customer", "all-cust"},
		{"dev-1", ""},
	}
	for _, c := range cases {
		f, ok := fs.Match(c.queue)
		if have := f.Name; have != c.want || ok != (c.want != "") {
			t.Errorf("Match(%q): want %q, have %q (%v)", c.queue, c.want, have, ok)
		}
	}
}

func TestFamilyValidateAndQueueFor(t *testing.T) {
	good := FamilyConfig{Name: "cust", Prefix: "cust-", Queue: QueueConfig{Ordered: true, OnFailure: OnFailurePark}}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid family: want no error, have %v", err)
	}
	q := good.QueueFor("cust-1")
	if q.Name != "cust-1" || q.Family != "cust" || !q.Parks() {
		t.Fatalf("QueueFor: want cust-1 of family cust, parking, have %+v", q)
	}
	for name, f := range map[string]FamilyConfig{
		"empty prefix":  {Name: "x"},
		"bad prefix":    {Name: "x", Prefix: "a:b"},
		"bad queue":     {Name: "x", Prefix: "x-", Queue: QueueConfig{OnFailure: OnFailurePark}},
		"negative idle": {Name: "x", Prefix: "x-", RetireAfter: -1},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: want ErrInvalidConfig, have %v", name, err)
		}
	}
}
