package ops

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drover-dev/drover/scheduler"
)

// A stored definition that is not JSON must not break the JSON views of the
// console and the API: it is shown as a string, with the reason.
func TestScheduleWithNonJSONDefinitionEncodes(t *testing.T) {
	raw := `{"queue":"a",`
	s := ScheduleOf(scheduler.Entry{Name: "x", State: scheduler.StateInvalid, Raw: []byte(raw), Err: errors.New("definition: unexpected end of JSON input")})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("want the entry encoded, have %v", err)
	}
	var back struct {
		Definition string `json:"definition"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Definition != raw || !strings.Contains(back.Error, "definition") {
		t.Fatalf("want definition %q and the reason, have %+v", raw, back)
	}
}
