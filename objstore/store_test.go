package objstore_test

import (
	"context"
	"errors"
	"iter"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/memstore"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// TestStore goes through the Store that OpenStore gives for s3://: write,
// open, read a head in one request, list, compose.
func TestStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	st, err := objstore.OpenStore(ctx, objstore.Location{Bucket: bucket}, objstore.Config{S3Config: e.config})
	if err != nil {
		t.Fatal(err)
	}
	data := random(3*MiB+7, 30)
	loc := objstore.Location{Bucket: bucket, Key: "store/a"}
	w, err := st.Create(ctx, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, loc, nil); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("Create of an existing object: %v, want ErrExists", err)
	}

	o, err := st.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != int64(len(data)) || o.ETag() == "" {
		t.Fatalf("Size %d, ETag %q", o.Size(), o.ETag())
	}
	e.px.Zero()
	head, err := o.Head(1000)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "head", head, data[:1000])
	if reqs := e.px.Requests(); len(reqs) != 1 || e.px.Down() > 1000+4096 {
		t.Errorf("Head(1000): %q, %d bytes down", reqs, e.px.Down())
	}
	if head, err := o.Head(len(data) + 5); err != nil || len(head) != len(data) {
		t.Errorf("Head beyond the end: %d bytes, %v", len(head), err)
	}

	dest := objstore.Location{Bucket: bucket, Key: "store/sub/b"}
	parts := []objstore.Part{objstore.Bytes([]byte("new head")), objstore.Range(o, 1000, o.Size()-1000)}
	if err := st.Compose(ctx, dest, parts, nil); err != nil {
		t.Fatal(err)
	}
	same(t, "composed", e.get(t, dest.Key), append([]byte("new head"), data[1000:]...))

	keys := func(seq iter.Seq2[objstore.ObjectInfo, error]) []string {
		var out []string
		for info, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, info.Key)
		}
		return out
	}
	prefix := objstore.Location{Bucket: bucket, Key: "store/"}
	if got, want := keys(st.List(ctx, prefix)), []string{"store/a", "store/sub/b"}; !slices.Equal(got, want) {
		t.Errorf("List: %q, want %q", got, want)
	}
	if got, want := keys(st.ListDir(ctx, prefix)), []string{"store/a", "store/sub/"}; !slices.Equal(got, want) {
		t.Errorf("ListDir: %q, want %q", got, want)
	}

	web := objstore.Location{URL: "https://example.org/f"}
	if _, err := st.Open(ctx, web); !errors.Is(err, objstore.ErrInvalidURL) {
		t.Errorf("Open of a URL on the S3 store: %v, want ErrInvalidURL", err)
	}
}

// TestWebStore reads a web resource through the Store of https:// and
// http://, which refuses to write, list or compose.
func TestWebStore(t *testing.T) {
	ctx := context.Background()
	data := random(2*MiB, 31)
	f := &webFile{data: data, etag: `"w1"`, modtime: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv := httptest.NewServer(f)
	defer srv.Close()
	loc, err := objstore.Parse(srv.URL + "/f.c4gh?token=good")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Scheme() != "http" {
		t.Fatalf("Scheme %q, want http", loc.Scheme())
	}
	st, err := objstore.OpenStore(ctx, loc, objstore.Config{Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	head, err := o.Head(100)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "head", head, data[:100])
	if o.ETag() != `"w1"` {
		t.Errorf("ETag %q", o.ETag())
	}

	_, err = st.Create(ctx, loc, nil)
	isKind(t, err, objstore.ErrUnsupported, errkind.Usage)
	for _, err := range st.List(ctx, loc) {
		isKind(t, err, objstore.ErrUnsupported, errkind.Usage)
	}
	isKind(t, st.Compose(ctx, loc, nil, nil), objstore.ErrUnsupported, errkind.Usage)
}

// TestRegister gives a scheme an Opener: OpenStore finds it by the scheme
// of the location, and knows no other. The Store registered is a backend
// outside this package, whose Objects come from NewObject.
func TestRegister(t *testing.T) {
	ctx := context.Background()
	mem := &memstore.Store{}
	var gotCfg objstore.Config
	objstore.Register("Mem-Test", func(ctx context.Context, cfg objstore.Config) (objstore.Store, error) {
		gotCfg = cfg
		return mem, nil
	})
	loc := objstore.Location{URL: "mem-test://x/y"}
	st, err := objstore.OpenStore(ctx, loc, objstore.Config{Attempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st != objstore.Store(mem) || gotCfg.Attempts != 3 {
		t.Errorf("OpenStore gave %v with %+v", st, gotCfg)
	}
	_, err = objstore.OpenStore(ctx, objstore.Location{URL: "ftp://x/y"}, objstore.Config{})
	isKind(t, err, objstore.ErrUnsupported, errkind.Usage)

	data := random(3*MiB, 32)
	w, err := st.Create(ctx, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	o, err := st.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	head, err := o.Head(10)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "head", head, data[:10])
	got := streamed(t, o, MiB, -1, &objstore.ReaderOptions{ChunkSize: 100000, Concurrency: 3})
	same(t, "stream", got, data[MiB:])
	mem.Put(loc, []byte("other"))
	if _, err := o.ReadAt(make([]byte, 5), 0); !errors.Is(err, objstore.ErrChanged) {
		t.Errorf("ReadAt of a replaced object: %v, want ErrChanged", err)
	}
}
