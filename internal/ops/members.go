package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/drover-dev/drover"
)

// State fetches a member's live state (GET /debug/state on its admin
// address, with MemberToken as a bearer token) and returns the document as
// served. It fails with drover.ErrNotFound for an unknown member and with
// ErrUnreachable when the member does not answer.
func (o Members) State(ctx context.Context, name string) (json.RawMessage, error) {
	members, err := o.zk.Group().Members(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Member.Name)
		if m.Member.Name != name && m.ID != name {
			continue
		}
		if m.Member.AdminAddr == "" {
			return nil, fmt.Errorf("%w: member %s has no admin address (worker.admin_addr is off)", ErrUnreachable, name)
		}
		return o.fetchState(ctx, m.Member.AdminAddr, "")
	}
	return nil, fmt.Errorf("member %q: %w (members: %s)", name, drover.ErrNotFound, strings.Join(names, ", "))
}

// fetchState GETs /debug/state?query (query "" for the whole state).
func (o *core) fetchState(ctx context.Context, addr, query string) (json.RawMessage, error) {
	url := "http://" + addr + "/debug/state"
	if query != "" {
		url += "?" + query
	}
	return o.get(ctx, url)
}

// get reads a member's admin endpoint (with MemberToken) and returns its
// JSON answer; any other answer than 200 with JSON is ErrUnreachable.
func (o *core) get(ctx context.Context, url string) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrUnreachable, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrUnreachable, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (set ctl.token, DROVER_CTL_TOKEN, to an operator token)"
		}
		return nil, fmt.Errorf("%w: GET %s: %s: %s%s", ErrUnreachable, url, resp.Status, strings.TrimSpace(string(body)), hint)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("%w: GET %s: not JSON", ErrUnreachable, url)
	}
	return body, nil
}

// TaskCounts are a member's drover_tasks_total counters summed: every
// attempt that ended, and those whose outcome was not "success".
type TaskCounts struct {
	Total, Failed float64
}

// TasksTotal reads each member's /metrics (the scrape endpoint, which needs
// no token) and returns the sums of its drover_tasks_total counters by
// member name; members that do not answer are left out. One GET per member.
func (o Members) TasksTotal(ctx context.Context, members []MemberRow) (map[string]TaskCounts, error) {
	out := map[string]TaskCounts{}
	var firstErr error
	for _, m := range members {
		if m.AdminAddr == "" {
			continue
		}
		v, err := o.memberTasks(ctx, m.AdminAddr)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out[m.Name] = v
	}
	return out, firstErr
}

func (o *core) memberTasks(ctx context.Context, addr string) (TaskCounts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return TaskCounts{}, err
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return TaskCounts{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return TaskCounts{}, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return TaskCounts{}, fmt.Errorf("GET %s/metrics: %w", addr, err)
	}
	var c TaskCounts
	if f, ok := fams["drover_tasks_total"]; ok {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue()
			c.Total += v
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() != "success" {
					c.Failed += v
				}
			}
		}
	}
	return c, nil
}
