package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// cleanupOptions are the flags of cleanup.
type cleanupOptions struct {
	store     storeOptions
	OlderThan string
	DryRun    bool
}

func cleanupCommand(e *env) command {
	o := &cleanupOptions{}
	return command{Command: &cli.Command{
		Name:      "cleanup",
		Usage:     "abort the multipart uploads left in progress under s3:// prefixes",
		ArgsUsage: "PREFIX…",
		Description: "Aborts the multipart uploads in progress under each s3://BUCKET/PREFIX/ (at\n" +
			"any depth; of the key alone for an object name) that were begun more than\n" +
			"--older-than ago, by any tool: an interrupted upload keeps its parts, which\n" +
			"take storage, until it is aborted. Prints one line for each (\"aborted\", or\n" +
			"\"would abort\" with -n). The default age, 24h, spares the uploads of runs\n" +
			"still under way; --older-than 0 aborts them all. crypt4gh ls --pending\n" +
			"shows them first. A bucket lifecycle rule (AbortIncompleteMultipartUpload)\n" +
			"does the same on the store's side: see docs/object-storage.md.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "older-than", Value: "24h", Usage: "abort the uploads begun more than `DURATION` ago (such as 90m, 36h, 7d; 0 for all)", Destination: &o.OlderThan},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be aborted, abort nothing", Destination: &o.DryRun},
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return cleanup(e.start(c, false, &o.store), o) },
	}, page: page{
		env: withAWS(),
		examples: []string{
			"crypt4gh cleanup -n s3://demo/",
			"crypt4gh cleanup --older-than 7d s3://demo/run1/",
		},
	}}
}

// parseAge parses a --older-than: a Go duration, or a number of days
// such as 7d.
func parseAge(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); err != nil && ok {
		var n float64
		if n, err = strconv.ParseFloat(days, 64); err == nil {
			d = time.Duration(n * float64(24*time.Hour))
		}
	}
	if err != nil || d < 0 {
		return 0, usagef("--older-than %q: give a duration such as 90m, 36h or 7d (0 for all)", s)
	}
	return d, nil
}

func cleanup(e *env, o *cleanupOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) == 0 {
		return withHint(usagef("no prefix given"), "crypt4gh cleanup s3://BUCKET/PREFIX/")
	}
	age, err := parseAge(o.OlderThan)
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-age)
	verb := "aborted"
	if o.DryRun {
		verb = "would abort"
	}
	failed, total, code := 0, 0, 0
	fail := func(err error) {
		failed, code = failed+1, max(code, exitCode(err), exitError)
		report(e.stderr, err)
	}
	for _, t := range e.args {
		err := eachPending(e, t, func(us objstore.UploadStore, u objstore.Upload) error {
			if age > 0 && !u.Started.Before(cutoff) {
				return nil
			}
			total++
			if !o.DryRun {
				if err := us.AbortUpload(e.ctx, u); err != nil {
					fail(err)
					return nil
				}
			}
			if _, err := fmt.Fprintf(e.stdout, "%s %s (upload %s, started %s)\n", verb, quoteName(u.Location.String()),
				shortID(u.ID), u.Started.UTC().Format(time.RFC3339)); err != nil {
				return fmt.Errorf("%w: %w", errWriteOutput, err)
			}
			return nil
		})
		if errors.Is(err, errWriteOutput) {
			return err
		}
		if err != nil {
			fail(err)
		}
	}
	if failed > 0 {
		return batchError{failed: failed, total: total, code: code}
	}
	return nil
}

// warnPending warns, once a run, when the object at loc, about to be
// written, has uploads in progress begun before (an interrupted run of
// this tool or another): their parts take storage until aborted. A
// store that does not list uploads, or refuses to, gets no warning.
func (e *env) warnPending(st objstore.Store, loc objstore.Location) {
	us, ok := st.(objstore.UploadStore)
	if !ok || e.quiet || e.stores.warned() {
		return
	}
	now := time.Now()
	n := 0
	for u, err := range us.Uploads(e.ctx, loc) {
		if err != nil {
			return
		}
		if u.Started.Before(now) {
			n++
		}
	}
	if n == 0 || !e.stores.warnOnce() {
		return
	}
	prefix := loc
	if i := strings.LastIndex(prefix.Key, "/"); i >= 0 {
		prefix.Key = prefix.Key[:i+1]
	} else {
		prefix.Key = ""
	}
	e.warnf("%s has %s begun earlier and never finished (an interrupted run?): their parts take storage until aborted; see crypt4gh ls --pending %s and crypt4gh cleanup %s",
		loc, plural(int64(n), "pending upload"), prefix, prefix)
}
