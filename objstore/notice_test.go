package objstore

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestNoticeDoneAtStop: a notice that has begun when its request ends is
// finished before stop returns, so that a command never writes one after
// it is done (the race detector found a notice written into a test's
// stderr after the command had returned).
func TestNoticeDoneAtStop(t *testing.T) {
	started := make(chan struct{})
	var finished atomic.Bool
	n := newNotifier(func(string) {
		close(started)
		time.Sleep(50 * time.Millisecond)
		finished.Store(true)
	}, 2*time.Millisecond, 1)
	stop := n.watch("host")
	<-started
	stop()
	if !finished.Load() {
		t.Fatal("stop returned while the notice was being given")
	}
	// A request answered in time: no notice, and stop does not wait.
	n = newNotifier(func(string) { t.Error("a notice for a request answered in time") }, time.Hour, 1)
	n.watch("host")()
}
