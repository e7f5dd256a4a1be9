package objstore

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// An Upload is a multipart upload that was begun and neither completed
// nor aborted: its parts hold storage (and are billed) until it is
// aborted, by a client or by a lifecycle rule of the bucket, yet no
// listing of objects shows it.
type Upload struct {
	Location Location // the object it would write
	ID       string   // the store's name for the upload
	Started  time.Time
}

// An UploadStore is a [Store] whose writes may leave uploads behind (an
// interrupted process, a lost network): it lists them, counts their
// parts, and aborts them. The S3 store is one; check with a type
// assertion.
type UploadStore interface {
	Store
	// Uploads returns the uploads in progress under the prefix loc, at
	// any depth, or of the key loc when it is not a prefix. The
	// iteration stops at the first error, which it yields.
	Uploads(ctx context.Context, loc Location) iter.Seq2[Upload, error]
	// UploadSize returns how many parts u holds and their bytes.
	UploadSize(ctx context.Context, u Upload) (parts int, bytes int64, err error)
	// AbortUpload abandons u and frees its parts. An upload that is gone
	// already is not an error.
	AbortUpload(ctx context.Context, u Upload) error
}

var _ UploadStore = s3Store{}

// Uploads returns the multipart uploads of bucket whose keys start with
// prefix, at any depth, in the order the server lists them (by key, then
// by start). The iteration stops at the first error, which it yields.
func (c *Client) Uploads(ctx context.Context, bucket, prefix string) iter.Seq2[Upload, error] {
	return func(yield func(Upload, error) bool) {
		in := &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix}
		for {
			out, err := c.s3.ListMultipartUploads(ctx, in)
			if err != nil {
				yield(Upload{}, c.fail("list the uploads of", bucket, prefix, err))
				return
			}
			for _, u := range out.Uploads {
				up := Upload{Location: Location{Bucket: bucket, Key: aws.ToString(u.Key)}, ID: aws.ToString(u.UploadId), Started: aws.ToTime(u.Initiated)}
				if up.ID == "" || !strings.HasPrefix(up.Location.Key, prefix) {
					continue
				}
				if !yield(up, nil) {
					return
				}
			}
			if !aws.ToBool(out.IsTruncated) || (out.NextKeyMarker == nil && out.NextUploadIdMarker == nil) {
				return
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
	}
}

// UploadSize returns how many parts the upload id of bucket/key holds,
// and their bytes.
func (c *Client) UploadSize(ctx context.Context, bucket, key, id string) (int, int64, error) {
	in := &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &id}
	parts, bytes := 0, int64(0)
	for {
		out, err := c.s3.ListParts(ctx, in)
		if err != nil {
			return 0, 0, c.fail("list the parts of", bucket, key, err)
		}
		for _, p := range out.Parts {
			parts++
			bytes += aws.ToInt64(p.Size)
		}
		if !aws.ToBool(out.IsTruncated) || out.NextPartNumberMarker == nil {
			return parts, bytes, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}

// AbortUpload aborts the upload id of bucket/key. One that is gone
// already (NoSuchUpload) is not an error.
func (c *Client) AbortUpload(ctx context.Context, bucket, key, id string) error {
	_, err := c.s3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: &id})
	if err != nil && statusOf(err) != http.StatusNotFound && codeOf(err) != "NoSuchUpload" {
		return c.fail("abort the upload of", bucket, key, err)
	}
	return nil
}

func (s s3Store) Uploads(ctx context.Context, loc Location) iter.Seq2[Upload, error] {
	return func(yield func(Upload, error) bool) {
		if err := s.check("list the uploads of", loc); err != nil {
			yield(Upload{}, err)
			return
		}
		for u, err := range s.c.Uploads(ctx, loc.Bucket, loc.Key) {
			if err == nil && !loc.IsPrefix() && u.Location.Key != loc.Key {
				continue // a longer key that starts with this one
			}
			if !yield(u, err) {
				return
			}
		}
	}
}

func (s s3Store) UploadSize(ctx context.Context, u Upload) (int, int64, error) {
	if err := s.check("list the parts of", u.Location); err != nil {
		return 0, 0, err
	}
	return s.c.UploadSize(ctx, u.Location.Bucket, u.Location.Key, u.ID)
}

func (s s3Store) AbortUpload(ctx context.Context, u Upload) error {
	if err := s.check("abort the upload of", u.Location); err != nil {
		return err
	}
	return s.c.AbortUpload(ctx, u.Location.Bucket, u.Location.Key, u.ID)
}

// A ListedOpener is a [Store] that opens an object described by a
// listing without asking the store again: a listing gives the size and
// the ETag that Open would fetch, so reading the header of each object of
// a listing costs one request instead of two. The S3 store is one.
type ListedOpener interface {
	OpenListed(ctx context.Context, loc Location, info ObjectInfo) (*Object, error)
}

var _ ListedOpener = s3Store{}

// OpenListed returns the object bucket/info.Key as the listing that gave
// info saw it: every read is pinned to info.ETag, so that an object
// replaced since is ErrChanged, as for Open.
func (c *Client) OpenListed(ctx context.Context, bucket string, info ObjectInfo) *Object {
	o := &Object{
		ctx: ctx, loc: Location{Bucket: bucket, Key: info.Key},
		size: info.Size, etag: info.ETag,
		client: c, attempts: c.attempts, idle: c.idle,
	}
	lm := info.LastModified
	o.src = &s3Source{c: c, bucket: bucket, key: info.Key, etag: info.ETag, lastModified: &lm}
	return o
}

func (s s3Store) OpenListed(ctx context.Context, loc Location, info ObjectInfo) (*Object, error) {
	if err := s.check("open", loc); err != nil {
		return nil, err
	}
	if info.Key == "" || strings.HasSuffix(info.Key, "/") || info.Size < 0 {
		return nil, s.c.fail("open", loc.Bucket, info.Key, &detailed{sentinel: ErrInvalidURL, detail: "not an object of a listing"})
	}
	return s.c.OpenListed(ctx, loc.Bucket, info), nil
}
