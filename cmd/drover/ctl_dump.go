package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover"
)

// dumpTimeout bounds the GET of a worker's /debug/state.
const dumpTimeout = 5 * time.Second

// debugState is the part of a worker's /debug/state the table shows; -o
// json prints the document as served.
type debugState struct {
	Member    string          `json:"member"`
	Suspended bool            `json:"suspended"`
	Paused    json.RawMessage `json:"paused"`
	Capacity  int             `json:"capacity"`
	InUse     int             `json:"in_use"`
	Queues    []struct {
		Name      string          `json:"name"`
		Committed drover.Position `json:"committed"`
		Done      drover.Position `json:"done"`
		Fetched   drover.Position `json:"fetched"`
		Buffered  int             `json:"buffered"`
		Paused    bool            `json:"paused"`
		InFlight  []struct {
			ID      string  `json:"id"`
			Task    string  `json:"task"`
			Attempt int     `json:"attempt"`
			PID     int     `json:"pid"`
			Runtime float64 `json:"runtime_seconds"`
		} `json:"in_flight"`
	} `json:"queues"`
	Pools []struct {
		Queue    string           `json:"queue"`
		Route    drover.TaskRoute `json:"route"`
		Children []struct {
			PID         int     `json:"pid"`
			Busy        bool    `json:"busy"`
			TasksServed int     `json:"tasks_served"`
			RSSBytes    int64   `json:"rss_bytes"`
			AgeSeconds  float64 `json:"age_seconds"`
		} `json:"children"`
	} `json:"pools"`
}

func (a *app) ctlDumpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "dump <member>",
		Short: "Print one worker's live state (its /debug/state)",
		Long: `Fetch GET http://<admin_addr>/debug/state from the member's admin server
(the address is in its member node) and print it: owned queues with their
committed, done and fetched positions, in-flight tasks with pid and
runtime, pause flags, and the warm children of pooled routes (pid, tasks
served, resident memory, age). -o json prints the document as served.`,
		Example: `  drover ctl dump worker-1
  drover ctl dump worker-1 -o json | jq '.queues[].in_flight'`,
		Args:              exactArgs(1, "a member name"),
		ValidArgsFunction: a.completeMembers,
		RunE: a.ctlRun(func(e *ctlEnv, args []string) error {
			s, err := e.zk()
			if err != nil {
				return err
			}
			members, err := s.Members(e.ctx)
			if err != nil {
				return err
			}
			addr, names := "", []string{}
			for _, m := range members {
				names = append(names, m.Member.Name)
				if m.Member.Name == args[0] || m.ID == args[0] {
					addr = m.Member.AdminAddr
				}
			}
			if addr == "" {
				for _, m := range members {
					if m.Member.Name == args[0] || m.ID == args[0] {
						return fmt.Errorf("member %s has no admin address (worker.admin_addr is off)", args[0])
					}
				}
				return fmt.Errorf("member %q: %w (members: %s)", args[0], drover.ErrNotFound, strings.Join(names, ", "))
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
			st, err := decodeDebugState(body)
			if err != nil {
				return fmt.Errorf("member %s: decode /debug/state: %w", args[0], err)
			}
			e.printf("MEMBER %s  ADMIN %s  CAPACITY %d  IN USE %d  SUSPENDED %v\n", st.Member, addr, st.Capacity, st.InUse, st.Suspended)
			if p := strings.TrimSpace(string(st.Paused)); p != "" && p != "null" && p != "{}" {
				e.printf("PAUSE FLAGS %s\n", p)
			}
			e.printf("\n")
			t := newTable(e.a.stdout, "QUEUE", "COMMITTED", "DONE", "FETCHED", "BUFFERED", "IN-FLIGHT", "PAUSED")
			for _, q := range st.Queues {
				t.row(q.Name, fmtPos(q.Committed), fmtPos(q.Done), fmtPos(q.Fetched), q.Buffered, len(q.InFlight), q.Paused)
			}
			if err := t.flush(); err != nil {
				return err
			}
			e.printf("\n")
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
			t = newTable(e.a.stdout, "POOL QUEUE", "ROUTE", "PID", "BUSY", "TASKS SERVED", "RSS", "AGE")
			for _, p := range st.Pools {
				route := "go"
				if len(p.Route.Command) > 0 {
					route = strings.Join(p.Route.Command, " ")
				}
				if len(p.Children) == 0 {
					t.row(p.Queue, route, "-", "-", "-", "-", "-")
				}
				for _, c := range p.Children {
					t.row(p.Queue, route, c.PID, c.Busy, c.TasksServed, drover.ByteSize(c.RSSBytes/1024*1024).String(),
						fmtAge(time.Duration(c.AgeSeconds*float64(time.Second))))
				}
			}
			return t.flush()
		}),
	}
}

// decodeDebugState reads a worker's state from /debug/state: either the
// worker's state itself, or a document that holds it under "worker" (with
// the member's generation and session next to it).
func decodeDebugState(body []byte) (debugState, error) {
	var wrapped struct {
		Worker     *debugState `json:"worker"`
		Generation int64       `json:"generation"`
	}
	if err := json.Unmarshal(body, &wrapped); err != nil {
		return debugState{}, err
	}
	if wrapped.Worker != nil {
		return *wrapped.Worker, nil
	}
	var st debugState
	err := json.Unmarshal(body, &st)
	return st, err
}

// fetchState GETs /debug/state from a worker's admin address.
func fetchState(e *ctlEnv, addr string) ([]byte, error) {
	url := "http://" + addr + "/debug/state"
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
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
