package drover

import (
	"encoding/json"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		bad  bool
	}{
		{"4096", 4096, false},
		{"200MiB", 200 << 20, false},
		{"1GiB", 1 << 30, false},
		{"1.5GiB", 3 << 29, false},
		{"500MB", 500e6, false},
		{"64K", 64 << 10, false},
		{"10 B", 10, false},
		{"lots", 0, true},
		{"-1MiB", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		have, err := ParseByteSize(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseByteSize(%q): want an error, have %d", tt.in, have)
			}
			continue
		}
		if err != nil || have != tt.want {
			t.Errorf("ParseByteSize(%q): want %d, have %d (%v)", tt.in, tt.want, have, err)
		}
	}
}

func TestPoolConfigJSONRoundTrip(t *testing.T) {
	in := `{"command":["python3","t.py"],"pool":{"max_tasks_per_child":1000,"max_memory_per_child":"200MiB","max_child_age":"1h"}}`
	var r TaskRoute
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.Pool == nil || r.Pool.MaxTasksPerChild != 1000 || r.Pool.MaxMemoryPerChild != 200<<20 || r.Pool.MaxChildAge.Std().Hours() != 1 {
		t.Fatalf("want the pool read, have %+v", r.Pool)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"command":["python3","t.py"],"pool":{"max_tasks_per_child":1000,"max_memory_per_child":"200MiB","max_child_age":"1h0m0s"}}` {
		t.Errorf("marshal: have %s", out)
	}
	var n TaskRoute
	if err := json.Unmarshal([]byte(`{"go":true,"pool":{"max_memory_per_child":1048576}}`), &n); err != nil || n.Pool.MaxMemoryPerChild != 1<<20 {
		t.Errorf("a number of bytes: want 1 MiB, have %+v (%v)", n.Pool, err)
	}
}

func TestValidateRefusesBadPools(t *testing.T) {
	for name, route := range map[string]TaskRoute{
		"inline":       {Inline: true, Pool: &PoolConfig{}},
		"negative max": {Go: true, Pool: &PoolConfig{MaxTasksPerChild: -1}},
		"negative mem": {Command: []string{"x"}, Pool: &PoolConfig{MaxMemoryPerChild: -1}},
		"negative age": {Command: []string{"x"}, Pool: &PoolConfig{MaxChildAge: -1}},
	} {
		c := QueueConfig{Name: "q", Tasks: map[string]TaskRoute{"t": route}}
		if err := c.Validate(); err == nil {
			t.Errorf("%s: want a validation error, have none", name)
		}
	}
	ok := QueueConfig{Name: "q", Tasks: map[string]TaskRoute{"t": {Go: true, Pool: &PoolConfig{MaxTasksPerChild: 10}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a pooled go route: want valid, have %v", err)
	}
}
