package mount

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/objstore"
)

// Objects returns the objects of bucket whose keys start with prefix, as a
// [Source]: the rest of each key, cut at every "/", is the path of a file
// in folders, as S3 tools show keys (a prefix that does not end in "/" is
// taken as if it did). A folder lists with one request for every 1,000
// entries; a file is opened with one request, pinned to the ETag it was
// listed with, so that an object replaced since the listing fails to open
// (objstore.ErrChanged) rather than show other bytes at the listed size.
// Where a key is both an object and the folder of other keys, the folder
// is shown, and the object is not.
//
// Reading a file costs what the read needs: the header of a Crypt4GH file
// in one request of at most 64 KiB, the segments that a read touches, and
// the read-ahead of [objstore.Object] (at most 1 MiB past a sequential
// read).
func Objects(c *objstore.Client, bucket, prefix string) Source {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &objectSource{c: c, bucket: bucket, prefix: prefix, listed: time.Now(), etags: map[string]string{}}
}

type objectSource struct {
	c      *objstore.Client
	bucket string
	prefix string
	listed time.Time // shown as the time of the folders

	mu    sync.Mutex
	etags map[string]string // of the files listed, by path
}

// String returns the prefix as a URL.
func (s *objectSource) String() string {
	return objstore.Location{Bucket: s.bucket, Key: s.prefix}.String()
}

func (s *objectSource) ReadDir(ctx context.Context, dir string) ([]Entry, error) {
	p := s.prefix
	if dir != "" {
		p += dir + "/"
	}
	var out []Entry
	etags := map[string]string{}
	index := map[string]int{}
	for info, err := range s.c.ListDir(ctx, s.bucket, p) {
		if err != nil {
			return nil, err
		}
		name, isDir := strings.CutSuffix(info.Key[len(p):], "/")
		e := Entry{Name: name, Dir: isDir, Size: info.Size, ModTime: info.LastModified}
		if isDir {
			e.ModTime = s.listed
		} else {
			etags[path.Join(dir, name)] = info.ETag
		}
		if i, ok := index[name]; ok {
			if isDir {
				out[i] = e // the folder wins
			}
			continue
		}
		index[name] = len(out)
		out = append(out, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range out {
		if !e.Dir {
			p := path.Join(dir, e.Name)
			s.etags[p] = etags[p]
		}
	}
	return out, nil
}

func (s *objectSource) Open(ctx context.Context, name string) (File, error) {
	// The object outlives this request: its reads come later.
	o, err := s.c.Open(context.WithoutCancel(ctx), s.bucket, s.prefix+name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	etag, listed := s.etags[name]
	s.mu.Unlock()
	if listed && etag != "" && o.ETag() != etag {
		return nil, fmt.Errorf("%s changed since it was listed (ETag %s, was %s): %w", o.Location(), o.ETag(), etag, objstore.ErrChanged)
	}
	return objectFile{o}, nil
}

// headRead is the largest read at the start of an object that is fetched
// as it is: a header.
const headRead = 64 << 10

// objectFile is an open object. A read at its start is fetched as it is,
// where objstore.Object would fetch a read-ahead window: the mount reads
// a header there, when it lists a folder.
type objectFile struct{ o *objstore.Object }

func (f objectFile) ReadAt(p []byte, off int64) (int, error) {
	if off != 0 || len(p) == 0 || len(p) > headRead {
		return f.o.ReadAt(p, off)
	}
	n := min(int64(len(p)), f.o.Size())
	r, err := f.o.NewReader(0, n, &objstore.ReaderOptions{ChunkSize: max(n, 1), Concurrency: 1})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	m, err := io.ReadFull(r, p[:n])
	if err == nil && m < len(p) {
		err = io.EOF
	}
	return m, err
}

func (f objectFile) Close() error { return nil }
