package objstore

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/url"
	"strings"
	"sync"
)

// A Store keeps objects: it is what the command, the mount and a server
// hold, whatever the backend behind it (S3 through a [Client], web servers
// through range requests). Locations are those that [Parse] returns for
// the store's scheme. A Store is safe for concurrent use.
//
// A backend that cannot do something (a web server is read only) returns
// an error wrapping [ErrUnsupported] for it.
type Store interface {
	// Open returns the object at loc as it is now: an io.ReaderAt with
	// its size and ETag, every read pinned to that version (see
	// [Object]), whose first bytes [Object.Head] reads with one
	// request. The context governs every request made for the Object.
	Open(ctx context.Context, loc Location) (*Object, error)

	// Create returns a writer of the object at loc. Nothing is visible
	// at loc until its Close succeeds; the caller must call Close or
	// Abort. Without opts.Force or opts.IfMatch an existing object is
	// ErrExists.
	Create(ctx context.Context, loc Location, opts *WriterOptions) (ObjectWriter, error)

	// List returns the objects under the prefix loc, at any depth.
	List(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error]

	// ListDir returns what lies directly under the prefix loc, as a
	// folder shows it (see [Client.ListDir]).
	ListDir(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error]

	// Compose writes the object at dest made of parts, in order, copying
	// the ranges of this store's objects on the server where it can
	// (see [Client.Compose]).
	Compose(ctx context.Context, dest Location, parts []Part, opts *ComposeOptions) error
}

// An ObjectWriter writes an object as a stream (a [Writer] for S3). It
// may also lend the memory of its next bytes, so that they are made in
// place rather than copied in: Lend(n int) ([]byte, error), as
// body.Lender has it ([Writer.Lend]).
type ObjectWriter interface {
	io.Writer
	// Close commits the object. Close after Close returns the result of
	// the first.
	Close() error
	// Abort abandons the object, leaving nothing on the server; after a
	// successful Close it does nothing.
	Abort() error
}

// An Opener returns the Store of a scheme, configured by cfg.
type Opener func(ctx context.Context, cfg Config) (Store, error)

var registry = struct {
	sync.RWMutex
	openers map[string]Opener
}{openers: map[string]Opener{
	"s3":    openS3,
	"https": openWeb,
	"http":  openWeb,
}}

// Register makes open the Opener of the scheme (lower case, without
// "://"), replacing any before it. s3, https and http are registered
// from the start.
func Register(scheme string, open Opener) {
	registry.Lock()
	defer registry.Unlock()
	registry.openers[strings.ToLower(scheme)] = open
}

// OpenStore returns a new Store for the scheme of loc, from the Opener
// registered for it.
func OpenStore(ctx context.Context, loc Location, cfg Config) (Store, error) {
	scheme := loc.Scheme()
	registry.RLock()
	open, ok := registry.openers[scheme]
	registry.RUnlock()
	if !ok {
		return nil, &Error{Op: "open", Location: loc.String(), Err: &detailed{sentinel: ErrUnsupported, detail: fmt.Sprintf("no store for scheme %q", scheme)}}
	}
	return open(ctx, cfg)
}

// Scheme returns the scheme of l, in lower case: "s3", or that of its URL.
func (l Location) Scheme() string {
	if l.URL == "" {
		return "s3"
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme)
}

func openS3(ctx context.Context, cfg Config) (Store, error) {
	c, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c.Store(), nil
}

// Store returns c as a [Store] of s3:// locations.
func (c *Client) Store() Store { return s3Store{c} }

// Endpoint returns the URL of the store's S3 endpoint, "" for AWS's own
// (see [ObjectOfURL]).
func (s s3Store) Endpoint() string { return s.c.endpoint }

// s3Store is a Client seen as a Store: its methods with Locations.
type s3Store struct{ c *Client }

var _ Store = s3Store{}

// check refuses a location that is not an s3:// one.
func (s s3Store) check(op string, loc Location) error {
	if loc.URL == "" {
		return nil
	}
	return urlFail(op, loc, &detailed{sentinel: ErrInvalidURL, detail: "not an s3:// location"})
}

func (s s3Store) Open(ctx context.Context, loc Location) (*Object, error) {
	if err := s.check("open", loc); err != nil {
		return nil, err
	}
	return s.c.Open(ctx, loc.Bucket, loc.Key)
}

func (s s3Store) Create(ctx context.Context, loc Location, opts *WriterOptions) (ObjectWriter, error) {
	if err := s.check("write", loc); err != nil {
		return nil, err
	}
	w, err := s.c.NewWriter(ctx, loc.Bucket, loc.Key, opts)
	if err != nil {
		return nil, err
	}
	return w, nil
}

func (s s3Store) List(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error] {
	if err := s.check("list", prefix); err != nil {
		return failed(err)
	}
	return s.c.List(ctx, prefix.Bucket, prefix.Key)
}

func (s s3Store) ListDir(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error] {
	if err := s.check("list", prefix); err != nil {
		return failed(err)
	}
	return s.c.ListDir(ctx, prefix.Bucket, prefix.Key)
}

func (s s3Store) Compose(ctx context.Context, dest Location, parts []Part, opts *ComposeOptions) error {
	if err := s.check("compose", dest); err != nil {
		return err
	}
	return s.c.Compose(ctx, dest.Bucket, dest.Key, parts, opts)
}

// failed is a listing that yields err alone.
func failed(err error) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) { yield(ObjectInfo{}, err) }
}

// webStore reads resources of web servers with range requests (see
// [OpenURL]); it writes, lists and composes nothing.
type webStore struct{ cfg Config }

var _ Store = webStore{}

func openWeb(ctx context.Context, cfg Config) (Store, error) { return webStore{cfg}, nil }

func (s webStore) Open(ctx context.Context, loc Location) (*Object, error) {
	if loc.URL == "" {
		return nil, &Error{Op: "open", Location: loc.String(), Err: &detailed{sentinel: ErrInvalidURL, detail: "not an http(s) URL"}}
	}
	return OpenURL(ctx, loc.URL, s.cfg)
}

func (s webStore) Create(ctx context.Context, loc Location, opts *WriterOptions) (ObjectWriter, error) {
	return nil, unsupported("write", loc)
}

func (s webStore) List(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error] {
	return failed(unsupported("list", prefix))
}

func (s webStore) ListDir(ctx context.Context, prefix Location) iter.Seq2[ObjectInfo, error] {
	return failed(unsupported("list", prefix))
}

func (s webStore) Compose(ctx context.Context, dest Location, parts []Part, opts *ComposeOptions) error {
	return unsupported("compose", dest)
}

func unsupported(op string, loc Location) error {
	return &Error{Op: op, Location: loc.String(), Err: &detailed{sentinel: ErrUnsupported, detail: "a web server is read only"}}
}
