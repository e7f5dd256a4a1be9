package objstore

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// noAnswerAfter is how long a request waits for an answer before
// [Config.Notice] hears of it: half the idle timeout, and 30 s at most.
func noAnswerAfter(idle time.Duration) time.Duration { return min(30*time.Second, idle/2) }

// notifier tells [Config.Notice] of requests that have had no answer for
// noAnswerAfter, once for each host: a server that accepts connections
// and never answers is otherwise a silent wait of up to the idle timeout
// for each attempt.
type notifier struct {
	notice   func(string)
	idle     time.Duration
	attempts int

	mu   sync.Mutex
	told map[string]bool
}

func newNotifier(notice func(string), idle time.Duration, attempts int) *notifier {
	if notice == nil {
		return nil
	}
	return &notifier{notice: notice, idle: idle, attempts: attempts, told: map[string]bool{}}
}

// watch starts the wait of a request to host; the caller calls the
// function it returns once an answer (or an error) came. Once stop has
// returned, no notice of this request is being given: one that had begun
// is finished, so that nothing is written after the command is done.
func (n *notifier) watch(host string) (stop func()) {
	if n == nil {
		return func() {}
	}
	after := noAnswerAfter(n.idle)
	told := make(chan struct{})
	t := time.AfterFunc(after, func() {
		defer close(told)
		n.mu.Lock()
		already := n.told[host]
		n.told[host] = true
		n.mu.Unlock()
		if !already {
			n.notice(noAnswerMessage(host, after, n.idle, n.attempts))
		}
	})
	return func() {
		if !t.Stop() {
			<-told
		}
	}
}

func noAnswerMessage(host string, after, idle time.Duration, attempts int) string {
	return "no answer from " + host + " in " + after.String() + " yet; each attempt waits " + idle.String() +
		" for an answer, " + strconv.Itoa(attempts) + " attempts in all"
}

// watchedClient is an HTTP client of the SDK whose requests are watched.
type watchedClient struct {
	c interface {
		Do(*http.Request) (*http.Response, error)
	}
	n *notifier
}

func (w watchedClient) Do(req *http.Request) (*http.Response, error) {
	defer w.n.watch(req.URL.Host)()
	return w.c.Do(req)
}
