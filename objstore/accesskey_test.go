package objstore_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// TestUnknownAccessKey: a store that answers an unknown access key with
// 404 (versitygw does) is still a refusal, not a missing bucket or
// object, also for the answers to HEAD, which carry no error code.
func TestUnknownAccessKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	e.put(t, "k", []byte("hello"))
	ctx := context.Background()
	bad := e.srv.S3Config(t, e.px.Addr)
	writeFile(t, bad, bytes.Replace(readFile(t, bad), []byte(e.srv.AccessKey), []byte("AKNOSUCHKEY00000000"), 1))
	c, err := objstore.New(ctx, objstore.Config{S3Config: bad})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Open(ctx, bucket, "k")
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	_, err = c.Open(ctx, bucket, "missing")
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	_, err = c.NewWriter(ctx, bucket, "new", nil)
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	for _, err := range c.List(ctx, bucket, "") {
		isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	}
	// A missing bucket is still one.
	_, err = e.c.Open(ctx, "no-such-bucket", "k")
	isKind(t, err, objstore.ErrNoBucket, errkind.Usage)
}
