package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/objstore"
)

// beginUpload leaves a multipart upload of key with the given parts
// pending, as an interrupted client would, and returns its ID.
func (e *env) beginUpload(t *testing.T, key string, parts ...[]byte) string {
	t.Helper()
	ctx := context.Background()
	out, err := e.sdk.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if _, err := e.sdk.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: &key, UploadId: out.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p)))}); err != nil {
			t.Fatal(err)
		}
	}
	return aws.ToString(out.UploadId)
}

// TestUploads lists the uploads left under a prefix and of one key,
// counts their parts and aborts them.
func TestUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	before := time.Now().Add(-time.Minute)
	id := e.beginUpload(t, "run/a.c4gh", random(5<<20, 1), random(1000, 2))
	e.beginUpload(t, "run/a.c4gh.more")
	e.beginUpload(t, "other/b")
	st := e.c.Store().(objstore.UploadStore)
	ctx := context.Background()

	var got []objstore.Upload
	for u, err := range st.Uploads(ctx, objstore.Location{Bucket: bucket, Key: "run/"}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	if len(got) != 2 || got[0].Location.Key != "run/a.c4gh" || got[1].Location.Key != "run/a.c4gh.more" {
		t.Fatalf("uploads under run/: %+v", got)
	}
	if got[0].ID != id || got[0].Started.Before(before) || got[0].Started.After(time.Now().Add(time.Minute)) {
		t.Errorf("upload %+v, want ID %s started about now", got[0], id)
	}
	// A key, not a prefix: that key alone.
	n := 0
	for u, err := range st.Uploads(ctx, objstore.Location{Bucket: bucket, Key: "run/a.c4gh"}) {
		if err != nil || u.ID != id {
			t.Errorf("uploads of run/a.c4gh: %+v, %v", u, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d uploads of run/a.c4gh, want 1", n)
	}
	parts, size, err := st.UploadSize(ctx, got[0])
	if err != nil || parts != 2 || size != 5<<20+1000 {
		t.Errorf("size of the upload: %d parts, %d bytes, %v", parts, size, err)
	}
	for _, u := range got {
		if err := st.AbortUpload(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AbortUpload(ctx, got[0]); err != nil {
		t.Errorf("aborting an upload that is gone: %v", err)
	}
	for u, err := range st.Uploads(ctx, objstore.Location{Bucket: bucket}) {
		if err != nil {
			t.Fatal(err)
		}
		if u.Location.Key != "other/b" {
			t.Errorf("left after the aborts: %+v", u)
		}
	}
}

// TestOpenListed reads an object as a listing described it, with one
// request for its head, and an object replaced since the listing is
// ErrChanged.
func TestOpenListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	data := random(100000, 3)
	e.put(t, "x", data)
	st := e.c.Store()
	ctx := context.Background()
	var info objstore.ObjectInfo
	for i, err := range st.List(ctx, objstore.Location{Bucket: bucket}) {
		if err != nil {
			t.Fatal(err)
		}
		info = i
	}
	e.px.Zero()
	o, err := st.(objstore.ListedOpener).OpenListed(ctx, objstore.Location{Bucket: bucket}, info)
	if err != nil {
		t.Fatal(err)
	}
	head, err := o.Head(1000)
	if err != nil || !bytes.Equal(head, data[:1000]) || o.Size() != int64(len(data)) {
		t.Fatalf("head: %d bytes, %v", len(head), err)
	}
	if n := len(e.px.Requests()); n != 1 {
		t.Errorf("%d requests for the head, want 1", n)
	}
	e.put(t, "x", random(100000, 4))
	if _, err := o.ReadAt(make([]byte, 10), 50000); !errors.Is(err, objstore.ErrChanged) {
		t.Errorf("read of a replaced object: %v", err)
	}
}

// TestResumeWriter goes on with an upload left pending: the parts that
// hold the source's bytes are kept (not sent again), the others are sent,
// and the object is the source. A Writer with Keep leaves its upload
// pending when aborted.
func TestResumeWriter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	src := random(12<<20, 7)
	opts := &objstore.WriterOptions{Size: int64(len(src)), PartSize: objstore.MinPartSize, Concurrency: 2}

	// Without a pending upload: from 0.
	w, from, err := e.c.ResumeWriter(ctx, bucket, "fresh", bytes.NewReader(src), opts)
	if err != nil || from != 0 {
		t.Fatalf("resume without an upload: from %d, %v", from, err)
	}
	w.Abort()

	// Part 1 right, part 2 of other bytes.
	e.beginUpload(t, "x", src[:objstore.MinPartSize], random(objstore.MinPartSize, 8))
	w, from, err = e.c.ResumeWriter(ctx, bucket, "x", bytes.NewReader(src), opts)
	if err != nil || from != objstore.MinPartSize {
		t.Fatalf("resume: from %d, %v", from, err)
	}
	e.px.Zero()
	if _, err := w.Write(src[from:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if up := e.px.Up(); up > int64(len(src))-objstore.MinPartSize+1<<20 {
		t.Errorf("%d bytes sent to finish %d of %d", up, int64(len(src))-from, len(src))
	}
	if got := e.get(t, "x"); !bytes.Equal(got, src) {
		t.Errorf("resumed object: %d bytes, not the source", len(got))
	}

	// Keep: an aborted Writer leaves its begun upload.
	opts.Keep = true
	w, err = e.c.NewWriter(ctx, bucket, "kept", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(src[:objstore.MinPartSize+1]); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	n := 0
	for u, err := range e.c.Uploads(ctx, bucket, "") {
		if err != nil {
			t.Fatal(err)
		}
		if u.Location.Key != "kept" {
			t.Errorf("pending: %+v", u)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d uploads pending after an abort with Keep, want 1", n)
	}
}
