package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/execfile"
)

// A queue whose owner was killed after committing its last message and
// before trimming it (a busy member trims a quiet key 10 s after its last
// commit) is trimmed by its next owner even though no message comes
// again: the claim's check finds the processed message still in the log
// and owes the trim. Before, only the next owner's own commit trimmed it,
// so a key that stayed quiet kept it for good, never counted as empty and
// was never retired (docs/decisions.md, "Issue 43: a claimed queue's
// untrimmed log is trimmed by its new owner").
func TestAQueueWhoseOwnerDiedBeforeItsTrimIsTrimmedByTheNextOwner(t *testing.T) {
	f := newFleet(t, 4*time.Second)
	ctx := context.Background()
	logPath := filepath.Join(f.dir, "runs.log")
	quick := taskScript(t, f.dir, logPath, "")
	// hold's task logs its start and runs for the rest of the test: its
	// member stays busy, so the quiet queue's trim waits.
	holdLog := filepath.Join(f.dir, "hold.log")
	hold := filepath.Join(f.dir, "hold.sh")
	body := fmt.Sprintf("#!/bin/sh\necho \"$DROVER_MESSAGE_ID\" >> %s\nexec sleep 600\n", holdLog)
	if err := execfile.Write(hold, []byte(body)); err != nil {
		t.Fatal(err)
	}
	f.createQueue("hold", false, []string{hold}, nil)
	f.createQueue("quiet", false, []string{quick}, nil)
	victim := f.startWorker("victim")
	f.enqueue([]string{"hold"}, 1)
	waitFor(t, time.Minute, "hold's task to start", func() bool {
		b, _ := os.ReadFile(holdLog)
		return len(b) > 0
	})

	// processed reports whether the quiet queue's log still holds a message
	// at or before its committed offset, and that offset.
	processed := func() (bool, drover.Position) {
		off, err := f.zk.Claims().Offset(ctx, "quiet")
		if err != nil {
			t.Fatal(err)
		}
		entries, err := f.store.Log().ReadAfter(ctx, "quiet", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries) > 0 && entries[0].Position <= off.Offset.Position, off.Offset.Position
	}
	// One message, run and committed; the kill must land before the trim
	// (10 s after the commit): on a machine too slow for that, try again.
	killed := false
	for attempt := 0; attempt < 3 && !killed; attempt++ {
		f.enqueue([]string{"quiet"}, 1)
		last := f.lastPos["quiet"]
		var untrimmed bool
		waitFor(t, time.Minute, "the quiet message to be committed", func() bool {
			var off drover.Position
			untrimmed, off = processed()
			return off >= last
		})
		if untrimmed {
			victim.cmd.Process.Signal(syscall.SIGKILL)
			<-victim.done
			killed = true
		}
	}
	if !killed {
		t.Fatal("the victim trimmed the quiet queue before every kill (three tries): the machine is too slow for this test")
	}
	f.startWorker("next")
	waitFor(t, 2*time.Minute, "the next owner to trim the quiet queue's processed message", func() bool {
		untrimmed, _ := processed()
		return !untrimmed
	})
}
