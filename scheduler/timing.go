package scheduler

import (
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// timing is a compiled Spec: how to find an entry's slots. A slot is a
// concrete instant in whole Unix seconds; its Unix time is part of the
// message id (sched:<name>:<slot-unix>).
type timing struct {
	// relative is the interval of a relative interval entry, whose next slot
	// is the last run plus relative; seq is nil then.
	relative time.Duration
	// seq is the fixed sequence of slots of every other entry.
	seq slotSeq
}

// slotSeq is a fixed, strictly increasing sequence of slots.
type slotSeq interface {
	// next returns the first slot strictly after t, or the zero time when
	// there is none.
	next(t time.Time) time.Time
}

// isSlot reports whether t is one of seq's slots.
func isSlot(seq slotSeq, t time.Time) bool {
	return seq.next(t.Add(-time.Second)).Equal(t)
}

// cronParser reads five fields, an optional leading seconds field, and
// descriptors (@daily, …). Expressions are parsed in UTC and mapped to the
// entry's time zone by cronSeq.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// compileSpec validates s and compiles it. Errors are *FieldError naming
// the field at fault.
func compileSpec(s Spec) (*timing, error) {
	unused := func(field string, set bool) error {
		if set {
			return fieldErr("schedule."+field, "not used by type %q", s.Type)
		}
		return nil
	}
	var errs []error
	switch s.Type {
	case TypeInterval:
		errs = append(errs, unused("expr", s.Expr != ""), unused("timezone", s.Timezone != ""), unused("at", !s.At.IsZero()))
	case TypeCron:
		errs = append(errs, unused("every", s.Every != 0), unused("relative", s.Relative), unused("at", !s.At.IsZero()))
	case TypeAt:
		errs = append(errs, unused("every", s.Every != 0), unused("relative", s.Relative),
			unused("expr", s.Expr != ""), unused("timezone", s.Timezone != ""))
	case "":
		return nil, fieldErr("schedule.type", "required: %q, %q or %q", TypeInterval, TypeCron, TypeAt)
	default:
		return nil, fieldErr("schedule.type", "want %q, %q or %q, have %q", TypeInterval, TypeCron, TypeAt, s.Type)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	switch s.Type {
	case TypeInterval:
		if err := checkEvery("schedule.every", s.Every); err != nil {
			return nil, err
		}
		if s.Relative {
			return &timing{relative: s.Every}, nil
		}
		return &timing{seq: alignedInterval{every: int64(s.Every / time.Second)}}, nil
	case TypeAt:
		if s.At.IsZero() {
			return nil, fieldErr("schedule.at", "required")
		}
		if s.At.Nanosecond() != 0 {
			return nil, fieldErr("schedule.at", "must be whole seconds, have %s", s.At.Format(time.RFC3339Nano))
		}
		return &timing{seq: oneShot{at: s.At}}, nil
	}
	return compileCron(s.Expr, s.Timezone)
}

func checkEvery(field string, d time.Duration) error {
	switch {
	case d == 0:
		return fieldErr(field, "required")
	case d < time.Second:
		return fieldErr(field, "must be at least 1s, have %s", d)
	case d%time.Second != 0:
		return fieldErr(field, "must be a whole number of seconds, have %s", d)
	}
	return nil
}

// compileCron parses a cron expression for time zone tz ("" = UTC).
func compileCron(expr, tz string) (*timing, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fieldErr("schedule.expr", "required")
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fieldErr("schedule.expr", "put the time zone in schedule.timezone, not in the expression")
	}
	loc := time.UTC
	if tz != "" {
		if tz == "Local" {
			return nil, fieldErr("schedule.timezone", "\"Local\" depends on the host; name an IANA zone such as \"Europe/Berlin\"")
		}
		l, err := time.LoadLocation(tz)
		if err != nil {
			return nil, fieldErr("schedule.timezone", "unknown time zone %q", tz)
		}
		loc = l
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fieldErr("schedule.expr", "@every: %v", err)
		}
		if err := checkEvery("schedule.expr", d); err != nil {
			return nil, err
		}
		return &timing{seq: alignedInterval{every: int64(d / time.Second)}}, nil
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fieldErr("schedule.expr", "%v", err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fieldErr("schedule.expr", "unsupported expression %q", expr)
	}
	spec.Location = time.UTC
	const allHours = 1<<24 - 1
	seq := &cronSeq{labels: spec, loc: loc, everyHour: spec.Hour&allHours == allHours}
	if seq.nextLabel(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fieldErr("schedule.expr", "%q matches no date", expr)
	}
	return &timing{seq: seq}, nil
}

// alignedInterval is every `every` seconds, aligned to the Unix epoch: the
// slots are the multiples of every. Two schedulers therefore agree on the
// slots without sharing any state.
type alignedInterval struct{ every int64 }

func (a alignedInterval) next(t time.Time) time.Time {
	s := t.Unix() // floor for times after the epoch
	return time.Unix((s/a.every+1)*a.every, 0).UTC()
}

// oneShot is a single slot.
type oneShot struct{ at time.Time }

func (o oneShot) next(t time.Time) time.Time {
	if o.at.After(t) {
		return o.at
	}
	return time.Time{}
}

// cronSeq is a cron expression in a time zone.
//
// The expression is evaluated on wall-clock labels (parsed in UTC, where
// robfig/cron's arithmetic is exact) and each matching label is mapped to
// instants in loc. Two rules handle daylight-saving changes:
//
//   - Expressions that match every hour (hour field "*", e.g. "*/5 * * * *",
//     "@hourly") follow elapsed time: a label in the spring-forward gap does
//     not exist and has no slot; a label repeated in the autumn has two slots,
//     an hour apart, because two real hours passed.
//   - All other expressions name wall-clock times (e.g. "30 2 * * *"): each
//     label fires exactly once. A label in the spring gap fires at the instant
//     it would have been without the change (02:30 in a 02:00→03:00 gap fires
//     at 03:30 summer time); a label repeated in the autumn fires at its first
//     occurrence only.
//
// robfig/cron v3.0.1 evaluated in the zone itself would instead skip the gap
// slot and fire the repeated one twice (docs/scheduler.md).
type cronSeq struct {
	labels    *cron.SpecSchedule // in UTC: labels are wall-clock times written as UTC
	loc       *time.Location
	everyHour bool
}

// maxShift bounds how far a zone's offset moves in one change; real
// daylight-saving changes move it by 30 minutes to 2 hours.
const maxShift = 3 * time.Hour

func (c *cronSeq) next(t time.Time) time.Time {
	// Near an offset change labels and instants are not in the same order
	// (02:30 shifted to 03:30 comes after the 03:10 label; 02:50 CEST comes
	// before 02:10 CET), so take the earliest instant after t over the
	// labels that can hold it. A label L has its instants in
	// [L-maxOff, L-minOff], with the offsets in force around t: labels
	// before t+minOff are too early, and once L-maxOff is not before the
	// best instant found, no later label can beat it. Away from a change
	// minOff = maxOff and this reads two labels.
	minOff, maxOff := offsetRange(t, c.loc)
	from := t.UTC().Add(minOff).Truncate(time.Second) // labels after it
	var best time.Time
	// The bound only stops a pathological expression from spinning.
	for i := 0; i < 100000; i++ {
		label := c.nextLabel(from)
		if label.IsZero() || (!best.IsZero() && !label.Add(-maxOff).Before(best)) {
			break
		}
		for _, at := range c.instants(label) {
			if at.After(t) && (best.IsZero() || at.Before(best)) {
				best = at
			}
		}
		from = label
	}
	return best
}

// offsetRange returns the smallest and largest UTC offsets loc has within
// maxShift of t.
func offsetRange(t time.Time, loc *time.Location) (lo, hi time.Duration) {
	lo, hi = time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, d := range []time.Duration{-maxShift, 0, maxShift} {
		_, off := t.Add(d).In(loc).Zone()
		o := time.Duration(off) * time.Second
		lo, hi = min(lo, o), max(hi, o)
	}
	return lo, hi
}

// nextLabel returns the first label after from, looking further than
// robfig/cron's five-year horizon (Feb 29 on a given weekday repeats every
// 28 years).
func (c *cronSeq) nextLabel(from time.Time) time.Time {
	for i := 0; i < 6; i++ {
		if n := c.labels.Next(from); !n.IsZero() {
			return n
		}
		from = from.AddDate(5, 0, 0)
	}
	return time.Time{}
}

// instants returns the slots of a wall-clock label, in increasing order.
func (c *cronSeq) instants(label time.Time) []time.Time {
	valid, shifted := wallInstants(label, c.loc)
	if c.everyHour {
		return valid
	}
	if len(valid) > 0 {
		return valid[:1]
	}
	return []time.Time{shifted}
}

// wallLabel is the wall-clock time of t in loc, written as UTC.
func wallLabel(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// wallInstants returns the instants whose wall-clock time in loc is label
// (none in a spring-forward gap, two in an autumn repeat), in increasing
// order, and, for a label in a gap, the instant it would be with the offset
// in force before the gap.
func wallInstants(label time.Time, loc *time.Location) (valid []time.Time, shifted time.Time) {
	// The offsets that can apply to this label: those in force a day
	// around it.
	var offsets [3]int
	for i, d := range []time.Duration{-24 * time.Hour, 0, 24 * time.Hour} {
		_, offsets[i] = label.Add(d).In(loc).Zone()
	}
	minOff := offsets[0]
	for _, off := range offsets {
		minOff = min(minOff, off)
		at := label.Add(-time.Duration(off) * time.Second)
		if !wallLabel(at, loc).Equal(label) {
			continue
		}
		dup := false
		for _, v := range valid {
			dup = dup || v.Equal(at)
		}
		if !dup {
			valid = append(valid, at)
		}
	}
	if len(valid) == 2 && valid[1].Before(valid[0]) {
		valid[0], valid[1] = valid[1], valid[0]
	}
	// In a gap the offset grows, so the smaller one was in force before it.
	return valid, label.Add(-time.Duration(minOff) * time.Second)
}
