package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// heldTimeout bounds one member's answer to "which of your queues wait for
// their rate limit": a member that does not answer leaves its queues
// unflagged rather than holding up the status.
const heldTimeout = 2 * time.Second

// RateLimitedQueues asks each member with an admin address which of its
// queues are held back by their rate limit (GET
// /debug/state?queues=rate_limited, one request per member, in parallel)
// and returns their names. Members that do not answer are left out; the
// first such failure is returned beside the answers of the others.
func (o Members) RateLimitedQueues(ctx context.Context, members []MemberRow) (map[string]bool, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		out      = map[string]bool{}
		firstErr error
	)
	for _, m := range members {
		if m.AdminAddr == "" {
			continue
		}
		wg.Add(1)
		go func(name, addr string) {
			defer wg.Done()
			names, err := o.memberRateLimited(ctx, addr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("member %s: %w", name, err)
				}
				return
			}
			for _, q := range names {
				out[q] = true
			}
		}(m.Name, m.AdminAddr)
	}
	wg.Wait()
	return out, firstErr
}

// memberRateLimited returns the rate-limited queues of the member at addr.
func (o *core) memberRateLimited(ctx context.Context, addr string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, heldTimeout)
	defer cancel()
	body, err := o.fetchState(ctx, addr, "queues=rate_limited")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Worker struct {
			QueueNames []string `json:"queue_names"`
		} `json:"worker"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: /debug/state?queues=rate_limited: %w", ErrUnreachable, err)
	}
	return doc.Worker.QueueNames, nil
}

// ownerRateLimited asks q's owner whether q waits for its rate limit; false
// when it is not owned or its owner does not answer (one request).
func (o *core) ownerRateLimited(ctx context.Context, q, owner string) bool {
	if owner == "" {
		return false
	}
	members, err := o.zk.Group().Members(ctx)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Member.Name != owner || m.Member.AdminAddr == "" {
			continue
		}
		names, err := o.memberRateLimited(ctx, m.Member.AdminAddr)
		if err != nil {
			return false
		}
		for _, n := range names {
			if n == q {
				return true
			}
		}
	}
	return false
}
