package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustCompile(t *testing.T, s Spec) *timing {
	t.Helper()
	tm, err := compileSpec(s)
	if err != nil {
		t.Fatalf("compile %+v: %v", s, err)
	}
	return tm
}

// slotsFrom returns the first n slots strictly after from.
func slotsFrom(seq slotSeq, from time.Time, n int) []time.Time {
	var out []time.Time
	for t := from; len(out) < n; {
		t = seq.next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func sameTimes(want, have []time.Time) bool {
	if len(want) != len(have) {
		return false
	}
	for i := range want {
		if !want[i].Equal(have[i]) {
			return false
		}
	}
	return true
}

// fmtTimes formats ts in loc, at most the first 8 (a failure message must
// stay readable; see firstDiff for long lists).
func fmtTimes(ts []time.Time, loc *time.Location) string {
	var b strings.Builder
	for i, t := range ts {
		if i == 8 {
			b.WriteString("…")
			break
		}
		b.WriteString(t.In(loc).Format("2006-01-02 15:04:05 MST") + "; ")
	}
	return b.String()
}

// firstDiff returns both lists from a little before their first difference.
func firstDiff(want, have []time.Time) ([]time.Time, []time.Time) {
	i := 0
	for i < len(want) && i < len(have) && want[i].Equal(have[i]) {
		i++
	}
	i = max(i-2, 0)
	return want[min(i, len(want)):], have[min(i, len(have)):]
}

// TestCronAcrossDST pins the slots of cron expressions across the spring gap
// and the autumn repeat in two zones: every slot fires once.
func TestCronAcrossDST(t *testing.T) {
	cases := []struct {
		name, expr, tz, from string
		want                 []string // UTC instants
	}{
		{
			// Berlin, 2025-03-30: 02:00 CET → 03:00 CEST. 02:30 does not
			// exist; it fires once, at 03:30 CEST (where it would have been).
			name: "Berlin spring gap, daily 02:30", expr: "30 2 * * *", tz: "Europe/Berlin",
			from: "2025-03-28T12:00:00Z",
			want: []string{"2025-03-29T01:30:00Z", "2025-03-30T01:30:00Z", "2025-03-31T00:30:00Z"},
		},
		{
			// Berlin, 2025-10-26: 03:00 CEST → 02:00 CET. 02:30 happens
			// twice; it fires once, at the first (CEST) occurrence.
			name: "Berlin autumn repeat, daily 02:30", expr: "30 2 * * *", tz: "Europe/Berlin",
			from: "2025-10-24T12:00:00Z",
			want: []string{"2025-10-25T00:30:00Z", "2025-10-26T00:30:00Z", "2025-10-27T01:30:00Z"},
		},
		{
			// A fixed-hour expression with several slots in the repeated
			// hour: each fires once, in the first pass through the hour.
			name: "Berlin autumn repeat, every 20 min in hour 2", expr: "*/20 2 * * *", tz: "Europe/Berlin",
			from: "2025-10-25T23:30:00Z",
			want: []string{"2025-10-26T00:00:00Z", "2025-10-26T00:20:00Z", "2025-10-26T00:40:00Z", "2025-10-27T01:00:00Z"},
		},
		{
			// An every-hour expression follows elapsed time: the hour that
			// does not exist has no slot …
			name: "Berlin spring gap, hourly", expr: "0 * * * *", tz: "Europe/Berlin",
			from: "2025-03-29T23:30:00Z",
			want: []string{"2025-03-30T00:00:00Z", "2025-03-30T01:00:00Z", "2025-03-30T02:00:00Z"},
		},
		{
			// … and the repeated hour has two: 02:00 CEST and 02:00 CET are
			// different hours, one slot each.
			name: "Berlin autumn repeat, hourly", expr: "@hourly", tz: "Europe/Berlin",
			from: "2025-10-25T22:30:00Z",
			want: []string{"2025-10-25T23:00:00Z", "2025-10-26T00:00:00Z", "2025-10-26T01:00:00Z", "2025-10-26T02:00:00Z"},
		},
		{
			// New York, 2025-03-09: 02:00 EST → 03:00 EDT.
			name: "New York spring gap, daily 02:00", expr: "0 2 * * *", tz: "America/New_York",
			from: "2025-03-07T12:00:00Z",
			want: []string{"2025-03-08T07:00:00Z", "2025-03-09T07:00:00Z", "2025-03-10T06:00:00Z"},
		},
		{
			name: "New York spring gap, daily 02:30 with seconds field", expr: "15 30 2 * * *", tz: "America/New_York",
			from: "2025-03-08T12:00:00Z",
			want: []string{"2025-03-09T07:30:15Z", "2025-03-10T06:30:15Z"},
		},
		{
			// New York, 2025-11-02: 02:00 EDT → 01:00 EST.
			name: "New York autumn repeat, daily 01:30", expr: "30 1 * * *", tz: "America/New_York",
			from: "2025-10-31T12:00:00Z",
			want: []string{"2025-11-01T05:30:00Z", "2025-11-02T05:30:00Z", "2025-11-03T06:30:00Z"},
		},
		{
			name: "New York autumn repeat, every 30 min", expr: "*/30 * * * *", tz: "America/New_York",
			from: "2025-11-02T04:50:00Z",
			want: []string{"2025-11-02T05:00:00Z", "2025-11-02T05:30:00Z", "2025-11-02T06:00:00Z", "2025-11-02T06:30:00Z", "2025-11-02T07:00:00Z"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := mustLoad(t, c.tz)
			tm := mustCompile(t, Spec{Type: TypeCron, Expr: c.expr, Timezone: c.tz})
			var want []time.Time
			for _, w := range c.want {
				want = append(want, utc(w))
			}
			have := slotsFrom(tm.seq, utc(c.from), len(want))
			if !sameTimes(want, have) {
				t.Fatalf("%s in %s from %s:\nwant %s\nhave %s", c.expr, c.tz, c.from, fmtTimes(want, loc), fmtTimes(have, loc))
			}
			// Resuming from any instant between two slots gives the same
			// sequence (the leader restarts from arbitrary times).
			for i := 1; i < len(want); i++ {
				for _, back := range []time.Duration{time.Second, 10 * time.Minute, 59 * time.Minute} {
					from := want[i].Add(-back)
					if !from.After(want[i-1]) {
						continue
					}
					if n := tm.seq.next(from); !n.Equal(want[i]) {
						t.Fatalf("next(%s) = %s, want %s", from.In(loc), n.In(loc), want[i].In(loc))
					}
				}
				if !isSlot(tm.seq, want[i]) {
					t.Fatalf("isSlot(%s) = false", want[i].In(loc))
				}
			}
		})
	}
}

// TestCronMatchesBruteForce checks cronSeq against an independent oracle
// built by walking every minute of real time through the DST months.
func TestCronMatchesBruteForce(t *testing.T) {
	exprs := []string{"30 2 * * *", "0 * * * *", "*/15 1-3 * * *", "0 0 * * *", "45 */2 * * *", "10,50 * * * *"}
	// Two days around each change of 2025: spring gap and autumn repeat
	// (Lord Howe moves by 30 minutes, in the southern seasons).
	windows := map[string][][2]string{
		"Europe/Berlin":       {{"2025-03-29T00:00:00Z", "2025-03-31T00:00:00Z"}, {"2025-10-25T00:00:00Z", "2025-10-27T00:00:00Z"}},
		"America/New_York":    {{"2025-03-08T12:00:00Z", "2025-03-10T12:00:00Z"}, {"2025-11-01T12:00:00Z", "2025-11-03T12:00:00Z"}},
		"Australia/Lord_Howe": {{"2025-04-05T00:00:00Z", "2025-04-07T00:00:00Z"}, {"2025-10-04T00:00:00Z", "2025-10-06T00:00:00Z"}},
	}
	for tz, zoneWindows := range windows {
		loc := mustLoad(t, tz)
		for _, expr := range exprs {
			tm := mustCompile(t, Spec{Type: TypeCron, Expr: expr, Timezone: tz})
			seq := tm.seq.(*cronSeq)
			for _, w := range zoneWindows {
				from, to := utc(w[0]), utc(w[1])
				want := oracle(seq, loc, from, to)
				var have []time.Time
				for s := seq.next(from); !s.IsZero() && s.Before(to); s = seq.next(s) {
					have = append(have, s)
				}
				if !sameTimes(want, have) {
					w2, h2 := firstDiff(want, have)
					t.Fatalf("%s in %s, %s–%s: %d slots, oracle %d; from the first difference:\nwant %s\nhave %s",
						expr, tz, w[0], w[1], len(have), len(want), fmtTimes(w2, loc), fmtTimes(h2, loc))
				}
			}
		}
	}
}

// oracle lists the slots in (from, to) by brute force: every real minute is
// tagged with its wall-clock label. An every-hour expression fires at every
// minute whose label matches; any other fires once per matching label, at
// the label's first minute, or, for a label skipped by a gap, at the minute
// just before the gap plus the label's distance from that minute's label.
func oracle(seq *cronSeq, loc *time.Location, from, to time.Time) []time.Time {
	matches := func(label time.Time) bool { return seq.labels.Next(label.Add(-time.Second)).Equal(label) }
	var out []time.Time
	seen := map[time.Time]bool{}
	var prev time.Time
	for i := from.Add(-12 * time.Hour); i.Before(to); i = i.Add(time.Minute) {
		label := wallLabel(i, loc)
		if seq.everyHour {
			if matches(label) && i.After(from) {
				out = append(out, i)
			}
			prev = i
			continue
		}
		// Labels skipped between the previous minute and this one (a gap).
		if !prev.IsZero() {
			pl := wallLabel(prev, loc)
			for l := pl.Add(time.Minute); l.Before(label); l = l.Add(time.Minute) {
				if matches(l) && !seen[l] {
					seen[l] = true
					if at := prev.Add(l.Sub(pl)); at.After(from) {
						out = append(out, at)
					}
				}
			}
		}
		if matches(label) && !seen[label] {
			seen[label] = true
			if i.After(from) {
				out = append(out, i)
			}
		}
		prev = i
	}
	// Two labels can land on one instant (02:00 shifted onto 03:00); it is
	// one slot. Keep the order strictly increasing.
	var dedup []time.Time
	for _, t := range out {
		if len(dedup) == 0 || t.After(dedup[len(dedup)-1]) {
			dedup = append(dedup, t)
		}
	}
	return dedup
}

func TestFeb29(t *testing.T) {
	tm := mustCompile(t, Spec{Type: TypeCron, Expr: "0 0 29 2 *"})
	want := []time.Time{utc("2028-02-29T00:00:00Z"), utc("2032-02-29T00:00:00Z"), utc("2036-02-29T00:00:00Z")}
	if have := slotsFrom(tm.seq, utc("2025-01-01T00:00:00Z"), 3); !sameTimes(want, have) {
		t.Fatalf("0 0 29 2 *: want %v, have %v", want, have)
	}
	// Across robfig/cron's five-year search horizon: Feb 29 that is also …
	// a date 6+ years ahead is still found.
	tm = mustCompile(t, Spec{Type: TypeCron, Expr: "0 0 29 2 *", Timezone: "Europe/Berlin"})
	if have := tm.seq.next(utc("2028-03-01T00:00:00Z")); !have.Equal(utc("2032-02-28T23:00:00Z")) {
		t.Fatalf("0 0 29 2 * Berlin after 2028: want 2032-02-29 00:00 CET, have %v", have)
	}
}

func TestEvery90s(t *testing.T) {
	tm := mustCompile(t, Spec{Type: TypeCron, Expr: "@every 90s"})
	// Aligned to multiples of 90 s since the epoch, whatever the start.
	have := slotsFrom(tm.seq, time.Unix(1000, 0), 3)
	want := []time.Time{time.Unix(1080, 0), time.Unix(1170, 0), time.Unix(1260, 0)}
	if !sameTimes(want, have) {
		t.Fatalf("@every 90s from 1000: want %v, have %v", want, have)
	}
	if have := tm.seq.next(time.Unix(1079, 999_000_000)); !have.Equal(time.Unix(1080, 0)) {
		t.Fatalf("@every 90s from 1079.999: want 1080, have %v", have.Unix())
	}
	interval := mustCompile(t, Spec{Type: TypeInterval, Every: 90 * time.Second})
	if have := slotsFrom(interval.seq, time.Unix(1000, 0), 3); !sameTimes(want, have) {
		t.Fatalf("interval 90s: want the same slots as @every 90s, have %v", have)
	}
}

func TestRelativeVersusAligned(t *testing.T) {
	every := 30 * time.Second
	aligned := mustCompile(t, Spec{Type: TypeInterval, Every: every})
	relative := mustCompile(t, Spec{Type: TypeInterval, Every: every, Relative: true})
	lastRun := time.Unix(1_000_017, 400_000_000) // ran 17.4 s past a multiple of 10
	meta := Meta{LastRunAt: lastRun, LastFire: time.Unix(1_000_010, 0)}
	now := lastRun.Add(time.Second)
	if have := planFirst(relative, meta, now); !have.Equal(time.Unix(1_000_047, 0)) {
		t.Fatalf("relative: next = last run + every: want 1000047, have %d", have.Unix())
	}
	if have := planFirst(aligned, meta, now); !have.Equal(time.Unix(1_000_020, 0)) {
		t.Fatalf("aligned: next = next multiple of 30: want 1000020, have %d", have.Unix())
	}
	// A relative entry that never ran fires at once.
	if have := planFirst(relative, Meta{}, now); !have.Equal(now.Truncate(time.Second)) {
		t.Fatalf("relative, never ran: want now, have %v", have)
	}
	// When it fires late, the next slot counts from the run, not the slot.
	f := planDue(relative, time.Unix(1_000_047, 0), time.Unix(1_000_052, 300), catchupPolicy{policy: CatchupOnce, grace: time.Minute, limit: 10})
	if len(f.fires) != 1 || !f.fires[0].Equal(time.Unix(1_000_047, 0)) || !f.next.Equal(time.Unix(1_000_082, 0)) {
		t.Fatalf("relative fired late: want fire 1000047, next 1000082; have %v, %v", f.fires, f.next)
	}
	f = planDue(aligned, time.Unix(1_000_050, 0), time.Unix(1_000_052, 300), catchupPolicy{policy: CatchupOnce, grace: time.Minute, limit: 10})
	if len(f.fires) != 1 || !f.fires[0].Equal(time.Unix(1_000_050, 0)) || !f.next.Equal(time.Unix(1_000_080, 0)) {
		t.Fatalf("aligned fired late: want fire 1000050, next 1000080; have %v, %v", f.fires, f.next)
	}
}

// TestCatchupAfterOutage: an hourly entry last fired at 10:00, scheduler down
// from 10:30 to 13:30 (slots 11:00, 12:00 and 13:00 missed).
func TestCatchupAfterOutage(t *testing.T) {
	hourly := mustCompile(t, Spec{Type: TypeCron, Expr: "0 * * * *"})
	pending := utc("2030-06-01T11:00:00Z")
	back := utc("2030-06-01T13:30:00Z")
	next := utc("2030-06-01T14:00:00Z")
	cases := []struct {
		policy Catchup
		now    time.Time
		fires  []time.Time
	}{
		{CatchupOnce, back, []time.Time{utc("2030-06-01T13:00:00Z")}},
		{CatchupSkip, back, nil},
		{CatchupAll, back, []time.Time{pending, utc("2030-06-01T12:00:00Z"), utc("2030-06-01T13:00:00Z")}},
		// Back at 13:00:30: 13:00 is on time (within the 1 min grace).
		{CatchupSkip, utc("2030-06-01T13:00:30Z"), []time.Time{utc("2030-06-01T13:00:00Z")}},
	}
	for _, c := range cases {
		f := planDue(hourly, pending, c.now, catchupPolicy{policy: c.policy, grace: time.Minute, limit: 1000})
		if !sameTimes(c.fires, f.fires) || !f.next.Equal(next) || f.dropped {
			t.Errorf("%s at %s: want fires %v next %v; have %v next %v dropped %v", c.policy, c.now, c.fires, next, f.fires, f.next, f.dropped)
		}
	}
	// all is bounded: an every-second entry down 3 hours fires the latest
	// 1000 slots only.
	secondly := mustCompile(t, Spec{Type: TypeCron, Expr: "* * * * * *"})
	f := planDue(secondly, pending, pending.Add(3*time.Hour), catchupPolicy{policy: CatchupAll, grace: time.Minute, limit: 1000})
	if len(f.fires) != 1000 || !f.dropped || !f.fires[999].Equal(pending.Add(3*time.Hour)) || !f.fires[0].Equal(pending.Add(3*time.Hour-999*time.Second)) {
		t.Fatalf("all, bounded: want the 1000 latest slots and dropped; have %d slots (%v…%v) dropped %v", len(f.fires), f.fires[0], f.fires[len(f.fires)-1], f.dropped)
	}
	// A year down costs no more than a few windows (not 31 million steps).
	f = planDue(secondly, pending, pending.AddDate(1, 0, 0), catchupPolicy{policy: CatchupOnce, grace: time.Minute, limit: 1000})
	if len(f.fires) != 1 || !f.fires[0].Equal(pending.AddDate(1, 0, 0)) {
		t.Fatalf("once after a year: want the latest slot, have %v", f.fires)
	}
	// A one-shot that was missed fires late under once, not under skip.
	at := mustCompile(t, Spec{Type: TypeAt, At: pending})
	if f := planDue(at, pending, back, catchupPolicy{policy: CatchupOnce, grace: time.Minute}); len(f.fires) != 1 || !f.next.IsZero() {
		t.Fatalf("missed at, once: want one fire and no next, have %v next %v", f.fires, f.next)
	}
	if f := planDue(at, pending, back, catchupPolicy{policy: CatchupSkip, grace: time.Minute}); len(f.fires) != 0 || !f.next.IsZero() {
		t.Fatalf("missed at, skip: want no fire and no next, have %v next %v", f.fires, f.next)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		json string
		want string // the whole message, or its start
	}{
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"5 4 * * mon","timezone":"Mars/Base"}}`,
			`schedule.timezone: unknown time zone "Mars/Base"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"61 * * * *"}}`,
			`schedule.expr: `},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"* * *"}}`,
			`schedule.expr: `},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"0 0 30 2 *"}}`,
			`schedule.expr: "0 0 30 2 *" matches no date`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron"}}`,
			`schedule.expr: required`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"CRON_TZ=UTC * * * * *"}}`,
			`schedule.expr: put the time zone in schedule.timezone`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"@every 1.5s"}}`,
			`schedule.expr: must be a whole number of seconds, have 1.5s`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"interval","every":"soon"}}`,
			`schedule.every: time: invalid duration "soon"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"interval","every":"500ms"}}`,
			`schedule.every: must be at least 1s, have 500ms`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"interval"}}`,
			`schedule.every: required`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"interval","every":30}}`,
			`schedule.every: want a JSON string, have number`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"interval","every":"1m","expr":"* * * * *"}}`,
			`schedule.expr: not used by type "interval"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"weekly"}}`,
			`schedule.type: want "interval", "cron" or "at", have "weekly"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"at","at":"tomorrow"}}`,
			`schedule.at: want an RFC 3339 time`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"cron","expr":"* * * * *","timezon":"Europe/Berlin"}}`,
			`definition: unknown field "timezon"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"},"catchup":"sometimes"}`,
			`catchup: want "once", "skip" or "all", have "sometimes"`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"},"jitter":"-1s"}`,
			`jitter: must not be negative, have -1s`},
		{`{"name":"x","queue":"a b","task":"t","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"}}`,
			`queue: invalid`},
		{`{"name":"x","queue":"q","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"}}`,
			`task: required`},
		{`{"name":"x:y","queue":"q","task":"t","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"}}`,
			`name: invalid`},
		{`{"name":"x","queue":"q","task":"t","schedule":{"type":"at","at":"2030-01-01T00:00:00Z"}`,
			`definition: not valid JSON`},
	}
	for _, c := range cases {
		_, err := ParseDefinition([]byte(c.json))
		if err == nil {
			t.Errorf("%s: want error %q, have none", c.json, c.want)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, drover.ErrInvalidConfig) {
			t.Errorf("%s: want a *FieldError wrapping ErrInvalidConfig, have %T %v", c.json, err, err)
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\nwant %q\nhave %q", c.json, c.want, err.Error())
		}
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	in := `{"name":"nightly","queue":"reports","task":"build","args":{"k":1},` +
		`"schedule":{"type":"cron","expr":"5 4 * * mon","timezone":"Europe/Berlin"},"catchup":"all","jitter":"30s"}`
	def, err := ParseDefinition([]byte(in))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if def.Disabled || def.Catchup != CatchupAll || def.Jitter != 30*time.Second || def.Schedule.Timezone != "Europe/Berlin" {
		t.Fatalf("parse: have %+v", def)
	}
	out, err := def.MarshalJSON()
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	again, err := ParseDefinition(out)
	if err != nil {
		t.Fatalf("parse marshalled %s: %v", out, err)
	}
	if string(again.Args) != `{"k":1}` || again.Schedule != def.Schedule || again.Jitter != def.Jitter || again.Disabled {
		t.Fatalf("round trip: want %+v, have %+v", def, again)
	}
	disabled, err := ParseDefinition([]byte(`{"name":"x","queue":"q","task":"t","enabled":false,"schedule":{"type":"at","at":"2030-01-01T00:00:00Z"}}`))
	if err != nil || !disabled.Disabled {
		t.Fatalf(`"enabled": false: want Disabled, have %+v, %v`, disabled, err)
	}
}

func TestJitterOffset(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		off := jitterOffset(name, 30*time.Second)
		if off < 0 || off > 30*time.Second || off%time.Second != 0 {
			t.Fatalf("jitterOffset(%s, 30s) = %s: want whole seconds in [0, 30s]", name, off)
		}
		if again := jitterOffset(name, 30*time.Second); again != off {
			t.Fatalf("jitterOffset(%s) is not deterministic: %s then %s", name, off, again)
		}
		seen[off] = true
	}
	if len(seen) < 2 {
		t.Fatalf("jitter does not spread entries: offsets %v", seen)
	}
	if off := jitterOffset("a", 0); off != 0 {
		t.Fatalf("no jitter: want offset 0, have %s", off)
	}
}
