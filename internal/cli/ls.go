package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/describe"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// lsOptions are the flags of ls.
type lsOptions struct {
	store          storeOptions
	Keys           cli.StringSlice // --sk, repeatable
	PassphraseFile string
	Recursive      bool
	Pending        bool
	JSON           bool
	Quiet          bool
}

func lsCommand(e *env) command {
	o := &lsOptions{}
	return command{Command: &cli.Command{
		Name:      "ls",
		Usage:     "list files or objects with their plaintext sizes and the keys that open them",
		ArgsUsage: "TARGET…",
		Description: "Lists each TARGET: a folder, or an s3://BUCKET/PREFIX/ prefix, one level as\n" +
			"ls does (all depths with -R), or a file or an object. For each file it\n" +
			"prints its size, whether it is a crypt4gh file, and the plaintext size: of\n" +
			"the body as the header tells without a key, or, when one of the keys of\n" +
			"--sk opens the file, after its edit list. With --sk (repeatable) it also\n" +
			"prints which of the keys open each file, by the names given. Only headers\n" +
			"are read: one small request for each object. A file that cannot be read\n" +
			"is reported on stderr and does not stop the listing; ls then exits with\n" +
			"the highest exit code of the failures (4 for a damaged file).\n" +
			"\n" +
			"With --pending, lists instead the multipart uploads in progress under\n" +
			"each s3:// prefix (at any depth; of the key alone for an object name), of\n" +
			"any tool: key, upload id, start, parts and bytes. Their parts take storage\n" +
			"until they are aborted: see crypt4gh cleanup.\n" +
			"\n" +
			"With --json, one JSON object a line. Files: name, kind (crypt4gh, other,\n" +
			"folder), size, body_plaintext_size, plaintext_size (null unless a key\n" +
			"opens the file), opened_by (null without --sk), error, and name_bytes\n" +
			"(base64) for a name that is not UTF-8. Uploads: key,\n" +
			"upload_id, started (RFC 3339), parts, bytes.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "sk", Usage: "try the secret key at `PATH` on each file (repeatable)", Destination: &o.Keys},
			passphraseFileFlag(&o.PassphraseFile),
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"R"}, Usage: "list folders and prefixes at all depths", Destination: &o.Recursive},
			&cli.BoolFlag{Name: "pending", Usage: "list the multipart uploads in progress under s3:// prefixes", Destination: &o.Pending},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object a line (fields above)", Destination: &o.JSON},
			quietFlag(&o.Quiet, false),
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return list(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env: withAWS(passphraseEnv),
		examples: []string{
			"crypt4gh ls --sk alice.sec --sk bob.sec s3://demo/run1/",
			"crypt4gh ls -R --json results/",
			"crypt4gh ls --pending s3://demo/",
		},
	}}
}

// lister prints the entries of ls and counts the failures.
type lister struct {
	e      *env
	o      *lsOptions
	keys   []describe.NamedKey
	table  *describe.Table
	total  int
	failed int
	code   int
}

func list(e *env, o *lsOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) == 0 {
		return withHint(usagef("nothing to list"), "give a folder, a file, or an s3://BUCKET/PREFIX/")
	}
	if o.Pending {
		if len(o.Keys.Value()) > 0 || o.Recursive {
			return usagef("--pending lists uploads: --sk and -R do not apply")
		}
		return listPending(e, o)
	}
	l := &lister{e: e, o: o}
	for _, p := range o.Keys.Value() {
		sk, err := readSecretKey(e, keyOptions{SK: p, PassphraseFile: o.PassphraseFile})
		if err != nil {
			return err
		}
		defer sk.Zero()
		l.keys = append(l.keys, describe.NamedKey{Name: p, Key: sk})
	}
	l.table = describe.NewTable(e.stdout, o.JSON, len(l.keys) > 0)
	for _, t := range e.args {
		var err error
		if objstore.IsURL(t) {
			err = l.objects(t)
		} else {
			err = l.local(t)
		}
		if err != nil {
			if errors.Is(err, errWriteOutput) {
				return err
			}
			// A target that cannot be listed keeps its own exit code,
			// and counts as one of the files of the summary.
			l.total++
			l.fail(fmt.Errorf("%s: %w", quoteName(shownName(t)), err))
			l.code = max(l.code, exitCode(err))
		}
	}
	if err := l.table.Flush(); err != nil {
		return fmt.Errorf("%w: %w", errWriteOutput, err)
	}
	if l.failed > 0 {
		return batchError{failed: l.failed, total: l.total, code: l.code}
	}
	return nil
}

// fail reports err, the failure of one entry, on stderr: ls then exits
// with the highest code of its failures, as a batch does (4 for a damaged
// file, 1 for one that cannot be read).
func (l *lister) fail(err error) {
	l.failed++
	l.code = max(l.code, exitCode(err), exitError)
	report(l.e.stderr, err)
}

// local lists the file or folder t.
func (l *lister) local(t string) error {
	fi, err := os.Stat(t)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return usagef("no such file or folder")
		}
		return pathErr(err)
	}
	if !fi.IsDir() {
		return l.print(l.file(t, fi))
	}
	if l.o.Recursive {
		return filepath.WalkDir(t, func(p string, d fs.DirEntry, err error) error {
			if p == t && err == nil {
				return nil
			}
			return l.walked(p, d, err)
		})
	}
	entries, err := os.ReadDir(t)
	if err != nil {
		return pathErr(err)
	}
	for _, d := range entries {
		if err := l.walked(filepath.Join(t, d.Name()), d, nil); err != nil && err != fs.SkipDir {
			return err
		}
	}
	return nil
}

// walked lists the entry d at p of a folder.
func (l *lister) walked(p string, d fs.DirEntry, err error) error {
	if err != nil {
		l.fail(fmt.Errorf("%s: %w", quoteName(p), pathErr(err)))
		return nil
	}
	if d.IsDir() {
		return l.print(describe.Entry{Name: p + string(filepath.Separator), Kind: describe.KindFolder})
	}
	fi, err := os.Stat(p) // a link: what it points to
	if err != nil {
		l.fail(fmt.Errorf("%s: %w", quoteName(p), pathErr(err)))
		return nil
	}
	if fi.IsDir() {
		return l.print(describe.Entry{Name: p + string(filepath.Separator), Kind: describe.KindFolder})
	}
	return l.print(l.file(p, fi))
}

// file describes the file at p.
func (l *lister) file(p string, fi os.FileInfo) describe.Entry {
	size := fi.Size()
	ent := describe.Entry{Name: p, Size: &size}
	if !fi.Mode().IsRegular() {
		ent.Kind = describe.KindOther
		ent.Size = nil
		return ent
	}
	f, err := os.Open(p)
	if err != nil {
		return l.failed1(ent, pathErr(err))
	}
	defer f.Close()
	return l.describe(ent, bufio.NewReaderSize(f, 8<<10), size)
}

// objects lists the object or prefix t.
func (l *lister) objects(t string) error {
	loc, err := objstore.Parse(t)
	if err != nil {
		return err
	}
	if loc.URL != "" {
		o, err := l.e.openObject(t)
		if err != nil {
			return err
		}
		return l.print(l.object(loc.String(), o))
	}
	st, err := l.e.store(loc)
	if err != nil {
		return err
	}
	if !loc.IsPrefix() {
		o, err := st.Open(l.e.ctx, loc)
		if errors.Is(err, objstore.ErrNotFound) && l.e.hasObjectsUnder(st, loc) {
			return withHint(err, "%s/ (with the slash) is a prefix with objects under it", loc)
		}
		if err != nil {
			return err
		}
		return l.print(l.object(loc.String(), o))
	}
	listing := st.ListDir
	if l.o.Recursive {
		listing = st.List
	}
	for info, err := range listing(l.e.ctx, loc) {
		if err != nil {
			return err
		}
		at := objstore.Location{Bucket: loc.Bucket, Key: info.Key}
		if !strings.HasPrefix(info.Key, loc.Key) {
			l.fail(fmt.Errorf("%s: the listing of %s returned this key, which is not under the prefix: skipped", at, loc))
			continue
		}
		if strings.HasSuffix(info.Key, "/") {
			if err := l.print(describe.Entry{Name: at.String(), Kind: describe.KindFolder}); err != nil {
				return err
			}
			continue
		}
		var o *objstore.Object
		if lo, ok := st.(objstore.ListedOpener); ok {
			o, err = lo.OpenListed(l.e.ctx, at, info)
		} else {
			o, err = st.Open(l.e.ctx, at)
		}
		if err != nil {
			l.fail(fmt.Errorf("%s: %w", at, err))
			continue
		}
		if err := l.print(l.object(at.String(), o)); err != nil {
			return err
		}
	}
	return nil
}

// object describes the object o, named name.
func (l *lister) object(name string, o *objstore.Object) describe.Entry {
	size := o.Size()
	ent := describe.Entry{Name: name, Size: &size}
	head, err := o.Head(objio.HeadSize)
	if err != nil {
		return l.failed1(ent, err)
	}
	var r io.Reader = bytes.NewReader(head)
	if int64(len(head)) < size {
		// A header larger than the head: the rest as it is read.
		r = io.MultiReader(r, io.NewSectionReader(o, int64(len(head)), size-int64(len(head))))
	}
	return l.describe(ent, r, size)
}

// describe fills in ent from the file read from r, of size bytes.
func (l *lister) describe(ent describe.Entry, r io.Reader, size int64) describe.Entry {
	ent, err := describe.List(ent, r, size, l.keys)
	if err != nil {
		l.fail(fmt.Errorf("%s: %w", quoteName(ent.Name), err))
	}
	return ent
}

// failed1 reports the failure of one entry, which is still printed.
func (l *lister) failed1(ent describe.Entry, err error) describe.Entry {
	l.fail(fmt.Errorf("%s: %w", quoteName(ent.Name), err))
	ent, _ = describe.Failed(ent, err)
	return ent
}

// print prints one entry.
func (l *lister) print(ent describe.Entry) error {
	l.total++
	if err := l.table.Print(ent); err != nil {
		return fmt.Errorf("%w: %w", errWriteOutput, err)
	}
	return nil
}

// pendingEntry is one upload of ls --pending, printed as is with --json.
type pendingEntry struct {
	Key      string    `json:"key"`
	UploadID string    `json:"upload_id"`
	Started  time.Time `json:"started"`
	Parts    int       `json:"parts"`
	Bytes    int64     `json:"bytes"`
}

// listPending lists the uploads under each target.
func listPending(e *env, o *lsOptions) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	enc := json.NewEncoder(e.stdout)
	titled := false
	failed, total, code := 0, 0, 0
	for _, t := range e.args {
		err := eachPending(e, t, func(us objstore.UploadStore, u objstore.Upload) error {
			total++
			parts, bytes, err := us.UploadSize(e.ctx, u)
			if err != nil {
				tw.Flush()
				failed, code = failed+1, max(code, exitCode(err), exitError)
				report(e.stderr, err)
				return nil
			}
			p := pendingEntry{Key: u.Location.String(), UploadID: u.ID, Started: u.Started.UTC(), Parts: parts, Bytes: bytes}
			if o.JSON {
				err = enc.Encode(p)
			} else {
				if !titled {
					titled = true
					fmt.Fprintln(tw, "STARTED\tPARTS\tBYTES\tUPLOAD\tKEY")
				}
				_, err = fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", p.Started.Format(time.RFC3339), parts, bytes, shortID(u.ID), quoteName(p.Key))
			}
			if err != nil {
				return fmt.Errorf("%w: %w", errWriteOutput, err)
			}
			return nil
		})
		if errors.Is(err, errWriteOutput) {
			return err
		}
		if err != nil {
			tw.Flush()
			failed, code = failed+1, max(code, exitCode(err), exitError)
			report(e.stderr, err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("%w: %w", errWriteOutput, err)
	}
	if failed > 0 {
		return batchError{failed: failed, total: total, code: code}
	}
	return nil
}

// eachPending calls fn for each upload in progress under the s3://
// target t (a prefix, or one key), in the order the store lists them.
func eachPending(e *env, t string, fn func(objstore.UploadStore, objstore.Upload) error) error {
	if !objstore.IsURL(t) {
		return usagef("%s: uploads are those of an s3:// store", quoteName(t))
	}
	loc, err := objstore.Parse(t)
	if err != nil {
		return err
	}
	if loc.URL != "" {
		return usagef("%s: uploads are those of an s3:// store", quoteName(shownName(t)))
	}
	st, err := e.store(loc)
	if err != nil {
		return err
	}
	us, ok := st.(objstore.UploadStore)
	if !ok {
		return usagef("%s: this store has no uploads to list", loc)
	}
	for u, err := range us.Uploads(e.ctx, loc) {
		if err != nil {
			return err
		}
		if err := fn(us, u); err != nil {
			return err
		}
	}
	return nil
}

// shortID is an upload id shortened for people: ids are long, and the
// first characters tell the uploads of a key apart.
func shortID(id string) string {
	if r := []rune(id); len(r) > 12 {
		return string(r[:12]) + "…"
	}
	return id
}
