package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/tlserr"
)

// attemptError is the failure of one attempt: whether another may
// succeed, and how long the server asked to wait first.
type attemptError struct {
	err   error
	again bool
	wait  time.Duration // Retry-After, 0 when not given
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// transient marks err as worth another attempt; permanent as not.
func transient(err error) error { return &attemptError{err: err, again: true} }
func permanent(err error) error {
	if err == nil {
		return nil
	}
	return &attemptError{err: err}
}

// retry runs attempt until it succeeds, fails permanently, or has run
// c.attempts() times, waiting between two. The error of the last attempt
// is returned; a transient one as errkind.Other, whatever its status
// (the server kept failing).
func (c *Client) retry(ctx context.Context, attempt func(context.Context) error) error {
	n := c.attempts()
	for i := 1; ; i++ {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		var ae *attemptError
		if !errors.As(err, &ae) || !ae.again {
			return unwrapAttempt(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if i >= n {
			if i > 1 {
				return errkind.Wrap(errkind.Other, fmt.Errorf("%w (after %d attempts)", ae.err, i))
			}
			return errkind.Wrap(errkind.Other, ae.err)
		}
		if err := sleep(ctx, c.wait(i, ae.wait)); err != nil {
			return err
		}
	}
}

// unwrapAttempt drops the attemptError around err.
func unwrapAttempt(err error) error {
	var ae *attemptError
	if errors.As(err, &ae) && ae == err {
		return ae.err
	}
	return err
}

// wait is how long to wait after the attempt i (from 1) failed: the
// server's Retry-After when given, else the backoff doubled each time
// with some jitter; at most maxBackoff.
func (c *Client) wait(i int, asked time.Duration) time.Duration {
	if asked > 0 {
		return min(asked, maxBackoff)
	}
	d := positive(c.Backoff, DefaultBackoff)
	for ; i > 1 && d < maxBackoff; i-- {
		d *= 2
	}
	d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	return min(d, maxBackoff)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// statusError is the error of a response whose status is not a success:
// the protocol's error (a transient one for a 5xx or 429).
func statusError(resp *http.Response) error {
	e := htsget.ReadError(resp.StatusCode, resp.Body)
	err := fmt.Errorf("%w (HTTP %d)", e, resp.StatusCode)
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return &attemptError{err: err, again: true, wait: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return permanent(err)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; 0 when
// absent or not understood.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return min(time.Duration(s)*time.Second, maxBackoff)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxBackoff)
	}
	return 0
}

// doError is the failure of a request that got no response: worth
// another attempt, unless the server's certificate does not verify,
// which another attempt meets again.
func doError(err error, stall func(error) error) error {
	if tlserr.Untrusted(err) {
		return permanent(netError(err))
	}
	return transient(stall(netError(err)))
}

// netError is err without the URL that *url.Error adds (its query may be
// a credential).
func netError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("network: %w", err)
}
