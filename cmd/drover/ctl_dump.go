package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// dumpTimeout bounds the GET of a worker's /debug/state.
const dumpTimeout = 5 * time.Second

func (a *app) ctlDumpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dump <member|host:port>",
		Short: "Print one worker's live state (its /debug/state)",
		Long: `Fetch GET http://<admin_addr>/debug/state from the member's admin server
(the address is in its member node) and print it: owned queues with their
committed, done and fetched positions, in-flight tasks with pid and
runtime, the pause flags it obeys, and the warm children of pooled routes
(pid, tasks served, resident memory, age). -o json prints the document as
served. Given host:port instead of a member name, it asks that admin
address directly, without ZooKeeper.`,
		Example: `  drover ctl dump worker-1
  drover ctl dump worker-1 -o json | jq '.queues[].in_flight'
  drover ctl dump 10.0.0.7:9090        # by admin address: works while ZooKeeper is down`,
		Args:              exactArgs(1, "a member name or an admin host:port"),
		ValidArgsFunction: a.completeMembers,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			addr, err := memberAdminAddr(e, args[0])
			if err != nil {
				return err
			}
			body, err := fetchState(e, addr)
			if err != nil {
				return err
			}
			if e.json {
				var buf bytes.Buffer
				if err := json.Indent(&buf, body, "", "  "); err != nil {
					return fmt.Errorf("member %s: /debug/state is not JSON: %w", args[0], err)
				}
				buf.WriteByte('\n')
				_, err = e.a.stdout.Write(buf.Bytes())
				return err
			}
			ms, err := ops.DecodeMemberState(body)
			st := ms.Worker
			if err != nil {
				return fmt.Errorf("member %s: decode /debug/state: %w", args[0], err)
			}
			e.printf("MEMBER %s  ADMIN %s  CAPACITY %d  IN USE %d  SUSPENDED %v\n", st.Member, addr, st.Capacity, st.InUse, st.Suspended)
			e.printf("PAUSED %s\n", describePauses(st.Paused.All, st.Paused.Member, st.Paused.Queues))
			e.printf("\n")
			t := newTable(e.a.stdout, "QUEUE", "COMMITTED", "DONE", "FETCHED", "BUFFERED", "IN-FLIGHT", "PAUSED", "HELD")
			for _, q := range st.Queues {
				held := "-"
				if q.RateLimited {
					held = "rate-limited" // waits for a token of its rate limit: not lagging
				}
				t.row(q.Name, fmtPos(q.Committed), fmtPos(q.Done), fmtPos(q.Fetched), q.Buffered, len(q.InFlight), q.Paused, held)
			}
			if err := t.flush(); err != nil {
				return err
			}
			e.printf("\n")
			inFlight := 0
			for _, q := range st.Queues {
				inFlight += len(q.InFlight)
			}
			if inFlight == 0 {
				e.printf("no task in flight\n")
				return nil
			}
			t = newTable(e.a.stdout, "QUEUE", "ID", "TASK", "ATTEMPT", "PID", "RUNTIME")
			for _, q := range st.Queues {
				for _, f := range q.InFlight {
					t.row(q.Name, f.ID, f.Task, f.Attempt, f.PID, fmtAge(time.Duration(f.Runtime*float64(time.Second))))
				}
			}
			if err := t.flush(); err != nil || len(st.Pools) == 0 {
				return err
			}
			e.printf("\n")
			t = newTable(e.a.stdout, "POOL QUEUES", "ROUTE", "PID", "BUSY", "TASKS SERVED", "RSS", "AGE")
			for _, p := range st.Pools {
				route := "go"
				if len(p.Route.Command) > 0 {
					route = strings.Join(p.Route.Command, " ")
				}
				queues := p.Queue // a state from a worker before pools were shared
				if p.Queues > 0 {
					queues = strconv.Itoa(p.Queues)
				}
				if len(p.Children) == 0 {
					t.row(queues, route, "-", "-", "-", "-", "-")
				}
				for _, c := range p.Children {
					t.row(queues, route, c.PID, c.Busy, c.TasksServed, drover.ByteSize(c.RSSBytes/1024*1024).String(),
						fmtAge(time.Duration(c.AgeSeconds*float64(time.Second))))
				}
			}
			return t.flush()
		}),
	}
}

// memberAdminAddr returns the admin address of the member named (or with
// the node id) arg, from its member node; an arg of the form host:port is
// the address itself, and needs no ZooKeeper.
func memberAdminAddr(e *ctlEnv, arg string) (string, error) {
	if _, port, err := net.SplitHostPort(arg); err == nil && port != "" {
		return arg, nil
	}
	s, err := e.zk()
	if err != nil {
		return "", err
	}
	members, err := s.Group().Members(e.ctx)
	if err != nil {
		return "", err
	}
	names := []string{}
	for _, m := range members {
		names = append(names, m.Member.Name)
		if m.Member.Name == arg || m.ID == arg {
			if m.Member.AdminAddr == "" {
				return "", fmt.Errorf("member %s has no admin address (worker.admin_addr is off)", arg)
			}
			return m.Member.AdminAddr, nil
		}
	}
	return "", fmt.Errorf("member %q: %w (members: %s)", arg, drover.ErrNotFound, strings.Join(names, ", "))
}

// describePauses says which pause flags a worker obeys: "-" for none, else
// "everything", "this member" and "queues a, b".
func describePauses(all, member bool, queues map[string]bool) string {
	var parts []string
	if all {
		parts = append(parts, "everything (ctl pause --all)")
	}
	if member {
		parts = append(parts, "this member")
	}
	var qs []string
	for q, p := range queues {
		if p {
			qs = append(qs, q)
		}
	}
	if len(qs) > 0 {
		sort.Strings(qs)
		parts = append(parts, "queues "+strings.Join(qs, ", "))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// fetchState GETs /debug/state from a worker's admin address.
func fetchState(e *ctlEnv, addr string) ([]byte, error) {
	url := "http://" + addr + "/debug/state"
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if e.cfg.Ctl.Token != "" { // debug endpoints need an operator token when auth.tokens is set
		req.Header.Set("Authorization", "Bearer "+e.cfg.Ctl.Token)
	}
	client := &http.Client{Timeout: dumpTimeout}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unreachableError{fmt.Errorf("GET %s: %w", url, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, unreachableError{fmt.Errorf("GET %s: %w", url, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
