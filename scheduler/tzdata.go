package scheduler

// The IANA time zone database is embedded so that cron entries with a
// timezone work on hosts and containers without /usr/share/zoneinfo
// (scratch and distroless images). When the host has the database, Go
// prefers it; the embedded copy (about 450 KB) is the fallback.
import _ "time/tzdata"
