// Package memstore is an objstore.Store kept in memory, for tests of what
// holds a Store (the mount's source, the registry) without a server.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/objstore"
)

// Store holds objects by bucket and key. Every version of an object gets
// a new ETag; an Object opened before a change reads ErrChanged after it.
// The zero Store is empty and ready to use.
type Store struct {
	mu      sync.Mutex
	objects map[objstore.Location]version
	n       int // versions made
}

type version struct {
	data []byte
	etag string
	mod  time.Time
}

var _ objstore.Store = (*Store)(nil)

// Put stores data at loc, as a new version.
func (s *Store) Put(loc objstore.Location, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects == nil {
		s.objects = map[objstore.Location]version{}
	}
	s.n++
	s.objects[loc] = version{data: slices.Clone(data), etag: fmt.Sprintf(`"v%d"`, s.n), mod: time.Now()}
}

func (s *Store) get(loc objstore.Location) (version, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.objects[loc]
	return v, ok
}

// Open returns the object at loc, pinned to its version.
func (s *Store) Open(ctx context.Context, loc objstore.Location) (*objstore.Object, error) {
	v, ok := s.get(loc)
	if !ok {
		return nil, &objstore.Error{Op: "open", Location: loc.String(), Err: objstore.ErrNotFound}
	}
	return objstore.NewObject(ctx, loc, int64(len(v.data)), v.etag, getter{s, loc, v.etag}, objstore.Config{Attempts: 2}), nil
}

// getter reads one version of an object.
type getter struct {
	s    *Store
	loc  objstore.Location
	etag string
}

func (g getter) GetRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	v, ok := g.s.get(g.loc)
	if !ok || v.etag != g.etag {
		return nil, fmt.Errorf("ETag is no longer %s: %w", g.etag, objstore.ErrChanged)
	}
	return io.NopCloser(bytes.NewReader(v.data[off : off+n])), nil
}

// Create returns a writer that stores the object at Close.
func (s *Store) Create(ctx context.Context, loc objstore.Location, opts *objstore.WriterOptions) (objstore.ObjectWriter, error) {
	force := opts != nil && (opts.Force || opts.IfMatch != "")
	if _, ok := s.get(loc); ok && !force {
		return nil, &objstore.Error{Op: "write", Location: loc.String(), Err: objstore.ErrExists}
	}
	return &writer{s: s, loc: loc}, nil
}

type writer struct {
	s      *Store
	loc    objstore.Location
	buf    bytes.Buffer
	closed bool
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, objstore.ErrAborted
	}
	return w.buf.Write(p)
}

func (w *writer) Close() error {
	if !w.closed {
		w.closed = true
		w.s.Put(w.loc, w.buf.Bytes())
	}
	return nil
}

func (w *writer) Abort() error {
	w.closed = true
	return nil
}

// List returns the objects under prefix, by key.
func (s *Store) List(ctx context.Context, prefix objstore.Location) iter.Seq2[objstore.ObjectInfo, error] {
	return s.list(prefix, false)
}

// ListDir returns the objects and folders directly under prefix, objects
// first, each kind by key.
func (s *Store) ListDir(ctx context.Context, prefix objstore.Location) iter.Seq2[objstore.ObjectInfo, error] {
	return s.list(prefix, true)
}

func (s *Store) list(prefix objstore.Location, dir bool) iter.Seq2[objstore.ObjectInfo, error] {
	s.mu.Lock()
	var objects []objstore.ObjectInfo
	folders := map[string]bool{}
	for loc, v := range s.objects {
		rest, ok := strings.CutPrefix(loc.Key, prefix.Key)
		if loc.Bucket != prefix.Bucket || !ok {
			continue
		}
		if i := strings.Index(rest, "/"); dir && i >= 0 {
			folders[prefix.Key+rest[:i+1]] = true
			continue
		}
		objects = append(objects, objstore.ObjectInfo{Key: loc.Key, Size: int64(len(v.data)), ETag: v.etag, LastModified: v.mod})
	}
	s.mu.Unlock()
	slices.SortFunc(objects, func(a, b objstore.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	for _, f := range slices.Sorted(maps.Keys(folders)) {
		objects = append(objects, objstore.ObjectInfo{Key: f})
	}
	return func(yield func(objstore.ObjectInfo, error) bool) {
		for _, o := range objects {
			if !yield(o, nil) {
				return
			}
		}
	}
}

// Compose stores the object made of parts, reading the ranges through
// their Objects; it replaces what is at dest.
func (s *Store) Compose(ctx context.Context, dest objstore.Location, parts []objstore.Part, opts *objstore.ComposeOptions) error {
	var b []byte
	for _, p := range parts {
		if p.Source == nil {
			b = append(b, p.Data...)
			continue
		}
		chunk := make([]byte, p.Length)
		if _, err := p.Source.ReadAt(chunk, p.Offset); err != nil && err != io.EOF {
			return err
		}
		b = append(b, chunk...)
	}
	s.Put(dest, b)
	return nil
}
