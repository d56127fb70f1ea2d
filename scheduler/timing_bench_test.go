package scheduler

import (
	"testing"
	"time"
)

// BenchmarkCronNext is the cost of finding one cron slot in a zone with
// daylight-saving changes, away from and across a change.
func BenchmarkCronNext(b *testing.B) {
	for _, c := range []struct {
		name, expr string
		from       time.Time
	}{
		{"daily", "30 2 * * *", time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"daily-across-autumn-change", "30 2 * * *", time.Date(2025, 10, 25, 23, 0, 0, 0, time.UTC)},
		{"every-minute-across-autumn-change", "* * * * *", time.Date(2025, 10, 26, 0, 30, 0, 0, time.UTC)},
	} {
		b.Run(c.name, func(b *testing.B) {
			tm, err := compileSpec(Spec{Type: TypeCron, Expr: c.expr, Timezone: "Europe/Berlin"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if tm.seq.next(c.from).IsZero() {
					b.Fatal("no slot")
				}
			}
		})
	}
}
